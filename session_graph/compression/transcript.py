"""The compact transcript a memo or summary model reads: one ``role: text`` line per message.

Tool calls are written ``-> name(args)``, tool results ``tool name: text``, non-text parts as
``[type ref]`` (inline binary as its digest, never its bytes). Compared with a JSON list of
message dicts it drops the keys repeated on every message, which were most of what a memo
model was re-sent.
"""

from __future__ import annotations

import json

from langchain_core.messages import AIMessage, BaseMessage, ToolMessage

from session_graph.accounting.attachments import summarize_part
from session_graph.messages import content_parts, role_of

__all__ = ["transcript", "transcript_line"]


def _text(message: BaseMessage) -> str:
    pieces: list[str] = []
    for part in content_parts(message):
        if isinstance(part, str):
            pieces.append(part)
        elif part.get("type") == "text" and isinstance(part.get("text"), str):
            pieces.append(part["text"])
        else:
            summary = summarize_part(part)
            pieces.append(f"[{summary['type']} {summary['ref'] or ''}]".replace(" ]", "]"))
    return " ".join(piece for piece in pieces if piece)


def transcript_line(message: BaseMessage) -> str:
    """One message as a transcript line (multi-line text stays as it is)."""
    role = role_of(message)
    if isinstance(message, ToolMessage):
        role = f"tool {message.name or message.tool_call_id}"
    elif message.name:
        role = f"{role} ({message.name})"
    text = _text(message)
    line = f"{role}: {text}" if text else role
    if isinstance(message, AIMessage):
        for call in message.tool_calls:
            line += f" -> {call['name']}({json.dumps(call['args'], ensure_ascii=False, default=str)})"
    return line


def transcript(messages: list[BaseMessage]) -> str:
    """The compact transcript of ``messages``, one line (or paragraph) each."""
    return "\n".join(transcript_line(message) for message in messages)
