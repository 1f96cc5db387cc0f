"""Import nanobot's session files: a metadata line, then one ``role/content/timestamp`` line each."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from langchain_core.messages import BaseMessage

from session_graph.errors import StoreError
from session_graph.messages import to_message

__all__ = ["read_nanobot_session"]

_MESSAGE_KEYS = ("role", "content", "tool_calls", "tool_call_id", "name")


def read_nanobot_session(path: str | Path) -> tuple[str, dict[str, Any], list[tuple[BaseMessage, str]]]:
    """(key, metadata, [(message, timestamp)]) of one nanobot ``.jsonl`` session file."""
    source = Path(path)
    try:
        lines = source.read_text().splitlines()
    except OSError as error:
        raise StoreError(f"cannot read the nanobot session {source}: {error}") from error
    key = source.stem.replace("_", ":", 1)
    metadata: dict[str, Any] = {}
    messages: list[tuple[BaseMessage, str]] = []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            data = json.loads(line)
        except json.JSONDecodeError as error:
            raise StoreError(f"{source}:{number} is not JSON ({error}).") from error
        if data.get("_type") == "metadata":
            key = data.get("key") or key
            metadata = {"imported_from": "nanobot", **(data.get("metadata") or {})}
            for stamp in ("created_at", "updated_at"):
                if data.get(stamp):
                    metadata[f"nanobot_{stamp}"] = data[stamp]
            continue
        fields = {k: data[k] for k in _MESSAGE_KEYS if k in data}
        if fields.get("content") is None and fields.get("role") != "assistant":
            fields["content"] = ""
        messages.append((to_message(fields, where=f"{source}:{number}"), str(data.get("timestamp", ""))))
    return key, metadata, messages
