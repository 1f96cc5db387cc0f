"""Exports of one stored session (JSON, Markdown, plain text) and its statistics."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from datetime import datetime
import json
from typing import Any

from langchain_core.messages import AIMessage, ToolMessage
import yaml

from session_graph._base.progress import Progress, tracked
from session_graph.stores.base import Snapshot
from session_graph.stores.codec import message_text, record_message

__all__ = ["SessionStats", "export_snapshot", "snapshot_stats"]

FORMATS = ("json", "yaml", "md", "txt")


@dataclass(frozen=True, slots=True)
class SessionStats:
    """Numbers about one session."""

    key: str
    messages: int
    by_role: dict[str, int]
    first_at: str
    last_at: str
    duration_seconds: float
    average_reply_chars: float


def _lines(snapshot: Snapshot, progress: Progress | None = None) -> list[tuple[dict[str, Any], Any]]:
    records = tracked(snapshot.records, len(snapshot.records), progress)
    return [(record, record_message(record, snapshot.key)) for record in records]


def export_snapshot(snapshot: Snapshot, fmt: str = "json", progress: Progress | None = None) -> str:
    """One session as ``json`` or ``yaml`` (state + messages with timestamps), ``md`` or ``txt``.

    ``progress`` is told ``(messages done, messages)``.
    """
    if fmt not in FORMATS:
        raise ValueError(f"export format {fmt!r} is not one of {', '.join(FORMATS)}.")
    if fmt in ("json", "yaml"):
        records = list(tracked(snapshot.records, len(snapshot.records), progress))
        document = {"key": snapshot.key, "state": snapshot.state, "messages": records}
        if fmt == "yaml":
            return yaml.safe_dump(document, allow_unicode=True, sort_keys=False)
        return json.dumps(document, ensure_ascii=False, indent=2)
    lines = _lines(snapshot, progress)
    out: list[str] = []
    if fmt == "md":
        out.append(f"# Session `{snapshot.key}`\n")
        for record, message in lines:
            out.append(f"**{record.get('role', message.type)}** · {record.get('ts', '')}\n")
            text = message_text(message)
            if text:
                out.append(text + "\n")
            if isinstance(message, AIMessage):
                for call in message.tool_calls:
                    out.append(f"- tool call `{call['name']}` ({call.get('id')}): `{json.dumps(call['args'], ensure_ascii=False)}`")
                if message.tool_calls:
                    out.append("")
            if isinstance(message, ToolMessage):
                out.append(f"_result of {message.tool_call_id}_\n")
        return "\n".join(out)
    for record, message in lines:
        calls = ""
        if isinstance(message, AIMessage) and message.tool_calls:
            calls = " " + " ".join(f"[calls {c['name']}({json.dumps(c['args'], ensure_ascii=False)})]" for c in message.tool_calls)
        out.append(f"[{record.get('ts', '')}] {record.get('role', message.type)}: {message_text(message)}{calls}")
    return "\n".join(out) + "\n"


def snapshot_stats(snapshot: Snapshot, progress: Progress | None = None) -> SessionStats:
    """Messages by role, duration from first to last message, average assistant reply length."""
    lines = _lines(snapshot, progress)
    roles = Counter(record.get("role", message.type) for record, message in lines)
    stamps = [record.get("ts", "") for record, _ in lines if record.get("ts")]
    duration = 0.0
    if len(stamps) >= 2:
        parse = lambda ts: datetime.fromisoformat(ts.replace("Z", "+00:00"))  # noqa: E731
        duration = (parse(stamps[-1]) - parse(stamps[0])).total_seconds()
    replies = [len(message_text(m)) for _, m in lines if isinstance(m, AIMessage) and not m.tool_calls]
    return SessionStats(
        key=snapshot.key,
        messages=len(lines),
        by_role=dict(roles),
        first_at=stamps[0] if stamps else "",
        last_at=stamps[-1] if stamps else "",
        duration_seconds=duration,
        average_reply_chars=sum(replies) / len(replies) if replies else 0.0,
    )
