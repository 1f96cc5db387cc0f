"""The compact transcript a memo or summary model reads: one ``role: text`` line per message.

Tool calls are written ``-> name(args)``, tool results ``tool name: text``, non-text parts as
``[type ref]`` (inline binary as its digest, never its bytes). Compared with a JSON list of
message dicts it drops the keys repeated on every message, which were most of what a memo
model was re-sent.

The lean form (``lean=True``, what memo and summary folds send) writes the roles as one
letter, ``U:`` user, ``A:`` assistant, ``T name:`` tool, ``S:`` system (``LEAN_LEGEND`` says
so once per prompt): with short messages the full role names were a fifth of what was sent.
"""

from __future__ import annotations

import json
import re

from langchain_core.messages import AIMessage, BaseMessage, ToolMessage

from session_graph.accounting.attachments import summarize_part
from session_graph.llm.quote import quote
from session_graph.messages import content_parts, part_text, role_of

__all__ = ["LEAN_LEGEND", "transcript", "transcript_line"]

LEAN_LEGEND = "Roles: U user, A assistant, T tool result, S system."
_LEAN = {"user": "U", "assistant": "A", "system": "S", "tool": "T"}


def _text(message: BaseMessage) -> str:
    pieces: list[str] = []
    for part in content_parts(message):
        text = part_text(part)
        if text is not None:
            pieces.append(text)
        else:
            summary = summarize_part(part)
            pieces.append(f"[{summary['type']} {summary['ref'] or ''}]".replace(" ]", "]"))
    return " ".join(piece for piece in pieces if piece)


def _as_is(text: str) -> str:
    return text


_PLAIN_ROLE = re.compile(r"[A-Za-z][A-Za-z0-9_-]{0,39}")  # a role shown as it is in a quoted transcript


def transcript_line(message: BaseMessage, lean: bool = False, quoted: bool = False) -> str:
    """One message as a transcript line (multi-line text stays as it is); ``lean``: one-letter roles;
    ``quoted``: its text and names as JSON strings, so the line is one line and nothing in it can
    pass for another message or the prompt's own text (what the commit prompts send)."""
    show = quote if quoted else _as_is
    role = role_of(message)
    if quoted and not _PLAIN_ROLE.fullmatch(role):  # a ChatMessage's role is free text: it must not end the line
        role = quote(role)
    if lean:
        role = _LEAN.get(role, role)
    if isinstance(message, ToolMessage):
        name = show(message.name or message.tool_call_id)
        role = f"{role} {name}" if lean else f"tool {name}"
    elif message.name:
        role = f"{role} ({show(message.name)})"
    text = _text(message)
    line = f"{role}: {show(text)}" if text else role
    if isinstance(message, AIMessage):
        for call in message.tool_calls:
            args = quote(call["args"]) if quoted else json.dumps(call["args"], ensure_ascii=False, default=str)
            line += f" -> {show(call['name'])}({args})"
    return line


def transcript(messages: list[BaseMessage], lean: bool = False, quoted: bool = False) -> str:
    """The compact transcript of ``messages``, one line (or paragraph) each (``lean``: one-letter roles;
    ``quoted``: one line each, its text and names as JSON strings, what the folds send)."""
    return "\n".join(transcript_line(message, lean, quoted) for message in messages)
