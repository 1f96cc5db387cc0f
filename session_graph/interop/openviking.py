"""OpenViking's on-disk session layout, read and written.

A session directory holds ``messages.jsonl`` (the messages no commit archived yet, one line
each), ``history/archive_NNN/{messages.jsonl,.abstract.md,.overview.md}`` (each archive's
messages, abstract and overview) and ``tools/{tool_id}/tool.json`` (each finished tool). A
session imported from it holds every message, archives first, in one full history; each
archive becomes a finished archive of its commit ledger (range, abstract, overview), so the
next ``commit()`` writes ``archive_{N+1}`` and never overwrites one. Exporting writes the same
layout back: lines byte-identical to the ones read.
"""

from __future__ import annotations

from collections.abc import Iterator
import json
import os
from pathlib import Path
import re
from typing import Any

from langchain_core.messages import BaseMessage, ToolMessage

from session_graph.errors import DocumentError, MessageError
from session_graph.memory.parts import ToolPart, dumps_line, line_to_messages, message_parts, messages_to_line
from session_graph.resize.state import SessionState

__all__ = ["read_openviking_session", "session_directories", "write_openviking_session"]

_ARCHIVE = re.compile(r"^archive_(\d+)$")


def session_directories(path: str | os.PathLike[str]) -> list[Path]:
    """The session directories at ``path``: itself if it is one, else its children that are.

    Raises:
        DocumentError: ``path`` holds no OpenViking session (naming what one looks like).
    """
    root = Path(path)
    if not root.is_dir():
        raise DocumentError(f"{root} is not a directory; import_openviking takes a session directory or a folder of them.")
    if _is_session(root):
        return [root]
    found = sorted(child for child in root.iterdir() if child.is_dir() and _is_session(child))
    if not found:
        raise DocumentError(f"{root} holds no OpenViking session (a directory with messages.jsonl or history/archive_NNN/).")
    return found


def _is_session(directory: Path) -> bool:
    return (directory / "messages.jsonl").is_file() or (directory / "history").is_dir()


def _lines(file: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    if not file.is_file():
        return
    for number, raw in enumerate(file.read_text(encoding="utf-8").split("\n"), 1):
        if not raw.strip():
            continue
        try:
            yield number, json.loads(raw)
        except ValueError as error:
            raise DocumentError(f"{file}:{number} is not JSON ({error}); fix or remove that line.") from None


def _messages(file: Path) -> list[BaseMessage]:
    out: list[BaseMessage] = []
    for number, line in _lines(file):
        try:
            out.extend(line_to_messages(line, f"{file}:{number}"))
        except MessageError as error:
            raise DocumentError(str(error)) from None
    return out


def read_openviking_session(directory: Path) -> tuple[list[BaseMessage], dict[str, Any], int]:
    """(messages, commit ledger, archived_through) of one session directory.

    Raises:
        DocumentError: a line that is not JSON or not a message line (naming the file and line).
    """
    archives = []
    history = directory / "history"
    if history.is_dir():
        for child in history.iterdir():
            match = _ARCHIVE.match(child.name)
            if child.is_dir() and match:
                archives.append((int(match.group(1)), child))
    archives.sort()
    messages: list[BaseMessage] = []
    done: dict[str, Any] = {}
    last_overview = ""
    for _, folder in archives:
        start = len(messages)
        messages.extend(_messages(folder / "messages.jsonl"))
        overview = _read(folder / ".overview.md")
        done[folder.name] = {"start": start, "end": len(messages), "abstract": _read(folder / ".abstract.md"),
                             "overview": overview, "created_at": ""}
        last_overview = overview
    archived_through = len(messages)
    messages.extend(_messages(directory / "messages.jsonl"))
    ledger = {"next": (archives[-1][0] + 1) if archives else 1, "pending": {}, "done": done, "last_overview": last_overview}
    return messages, ledger, archived_through


def _read(file: Path) -> str:
    return file.read_text(encoding="utf-8") if file.is_file() else ""


def write_openviking_session(state: SessionState, directory: str | os.PathLike[str]) -> Path:
    """Write a session in OpenViking's layout under ``directory/<session id>``; returns that folder."""
    folder = Path(directory) / state.id
    full = list(state.full_chat_history)
    results = {m.tool_call_id: m for m in full if isinstance(m, ToolMessage)}
    ledger = state.archives or {}
    done = sorted((ledger.get("done") or {}).items(), key=lambda item: item[1].get("start", 0))
    for name, record in done:
        archive = folder / "history" / name
        archive.mkdir(parents=True, exist_ok=True)
        _write_lines(archive / "messages.jsonl", full[record["start"] : record["end"]], results)
        (archive / ".abstract.md").write_text(record.get("abstract", ""), encoding="utf-8")
        (archive / ".overview.md").write_text(record.get("overview", ""), encoding="utf-8")
    folder.mkdir(parents=True, exist_ok=True)
    live = full[state.archived_through :]
    _write_lines(folder / "messages.jsonl", live, results)
    for message in full:
        if isinstance(message, ToolMessage):
            continue
        created = messages_to_line(message, results)["created_at"]
        for part in message_parts(message, results):
            if isinstance(part, ToolPart) and part.tool_status in ("completed", "error"):
                tool = folder / "tools" / part.tool_id
                tool.mkdir(parents=True, exist_ok=True)
                record = {"tool_id": part.tool_id, "tool_name": part.tool_name, "session_id": state.id,
                          "input": part.tool_input, "output": part.tool_output, "status": part.tool_status,
                          "time": {"created": created}}
                (tool / "tool.json").write_text(json.dumps(record, ensure_ascii=False), encoding="utf-8")
    return folder


def _write_lines(file: Path, messages: list[BaseMessage], results: dict[str, ToolMessage]) -> None:
    lines = [dumps_line(messages_to_line(m, results)) for m in messages if not isinstance(m, ToolMessage)]
    file.write_text("".join(f"{line}\n" for line in lines), encoding="utf-8")
