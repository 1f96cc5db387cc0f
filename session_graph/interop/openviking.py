"""OpenViking's on-disk session layout, read and written.

A session directory holds ``messages.jsonl`` (the messages no commit archived yet, one line
each), ``history/archive_NNN/{messages.jsonl,.abstract.md,.overview.md}`` (each archive's
messages, abstract and overview) and ``tools/{tool_id}/tool.json`` (each finished tool). A
session imported from it holds every message, archives first, in one full history; each
archive becomes a finished archive of its commit ledger (range, abstract, overview), so the
next ``commit()`` writes ``archive_{N+1}`` and never overwrites one. Exporting writes the same
layout back: lines byte-identical to the ones read; the session root's ``.abstract.md`` and
``.overview.md`` and each ``tool.json`` as they were read (a tool.json is rebuilt only if the
tool's name, input, output or status changed since).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
import json
import os
from pathlib import Path
import re
from typing import Any

from langchain_core.messages import BaseMessage, ToolMessage

from session_graph._base.paths import folder_name, inside, read_text, replace_text
from session_graph.errors import DocumentError, MessageError, StoreError
from session_graph.memory.parts import ToolPart, dumps_line, line_to_messages, message_parts, messages_to_line
from session_graph.resize.state import SessionState

__all__ = ["covered", "read_openviking_session", "session_directories", "write_openviking_session"]

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
    found = []
    for child in sorted(root.iterdir()):
        if child.is_dir() and _is_session(child):
            inside(root, child.name, "OpenViking session folder")  # a linked session folder is refused, not followed
            found.append(child)
    if not found:
        raise DocumentError(f"{root} holds no OpenViking session (a directory with messages.jsonl or history/archive_NNN/).")
    return found


def _is_session(directory: Path) -> bool:
    return (directory / "messages.jsonl").is_file() or (directory / "history").is_dir()


def _lines(directory: Path, name: str) -> Iterator[tuple[str, int, dict[str, Any]]]:
    text = read_text(directory, name, "OpenViking file")
    file = directory / name
    for number, raw in enumerate((text or "").split("\n"), 1):
        if not raw.strip():
            continue
        try:
            yield str(file), number, json.loads(raw)
        except RecursionError:
            raise DocumentError(f"{file}:{number} nests too deeply to be a message line; fix or remove that line.") from None
        except ValueError as error:
            raise DocumentError(f"{file}:{number} is not JSON ({error}); fix or remove that line.") from None


def _messages(directory: Path, name: str) -> list[BaseMessage]:
    out: list[BaseMessage] = []
    for file, number, line in _lines(directory, name):
        try:
            out.extend(line_to_messages(line, f"{file}:{number}"))
        except MessageError as error:
            raise DocumentError(str(error)) from None
        except RecursionError:
            raise DocumentError(f"{file}:{number} nests too deeply to be a message line; fix or remove that line.") from None
    return out


def read_openviking_session(directory: Path) -> tuple[list[BaseMessage], dict[str, Any], int]:
    """(messages, commit ledger, archived_through) of one session directory.

    Raises:
        DocumentError: a line that is not JSON or not a message line (naming the file and line).
    """
    archives = []
    history = inside(directory, "history", "OpenViking history folder")
    if history.is_dir():
        for child in history.iterdir():
            match = _ARCHIVE.match(child.name)
            if match and not child.is_symlink() and child.is_dir():
                archives.append((int(match.group(1)), child))
            elif match and child.is_symlink():
                inside(directory, f"history/{child.name}", "OpenViking archive")  # raises: a link
    archives.sort()
    messages: list[BaseMessage] = []
    done: dict[str, Any] = {}
    last_overview = ""
    for _, folder in archives:
        start = len(messages)
        where = f"history/{folder.name}"
        messages.extend(_messages(directory, f"{where}/messages.jsonl"))
        overview = read_text(directory, f"{where}/.overview.md", "OpenViking overview") or ""
        done[folder.name] = {"start": start, "end": len(messages),
                             "abstract": read_text(directory, f"{where}/.abstract.md", "OpenViking abstract") or "",
                             "overview": overview, "created_at": ""}
        last_overview = overview
    archived_through = len(messages)
    messages.extend(_messages(directory, "messages.jsonl"))
    ledger = {"next": (archives[-1][0] + 1) if archives else 1, "pending": {}, "done": done, "last_overview": last_overview}
    kept = _as_read(directory)
    if kept:
        ledger["openviking"] = kept
    return messages, ledger, archived_through


def _as_read(directory: Path) -> dict[str, Any]:
    """The files an export writes back as they were read: the session root's ``.abstract.md`` and
    ``.overview.md`` and each ``tools/<id>/tool.json`` (its text, byte for byte)."""
    kept: dict[str, Any] = {}
    for name in (".abstract.md", ".overview.md"):
        if (directory / name).is_file():
            kept[name] = _read(directory / name)
    tools = directory / "tools"
    if tools.is_dir():
        found = {child.name: _read(child / "tool.json") for child in sorted(tools.iterdir()) if (child / "tool.json").is_file()}
        if found:
            kept["tools"] = found
    return kept


def _read(file: Path) -> str:
    return file.read_text(encoding="utf-8") if file.is_file() and not file.is_symlink() else ""  # links are never followed


def write_openviking_session(state: SessionState, directory: str | os.PathLike[str]) -> Path:
    """Write a session in OpenViking's layout under ``directory/<session id>``; returns that folder.

    Every path comes from data (the session id, archive names, tool-call ids), so each is
    checked to stay inside ``directory`` (a tool id that is not a plain name gets a safe
    stand-in folder; the id itself stays in ``tool.json``). A file already there is replaced
    only when nothing in it would be lost: each of its lines is in one of the message files
    written (a re-export, an export of what was imported, or after a commit moved live
    messages into an archive), or its text is the same. Everything is
    checked before the first file is written.

    Raises:
        DocumentError: an archive name that is not ``archive_NNN``.
        StoreError: a path that would leave ``directory`` or cross a link, or a file there that
            changed since it was imported or exported (another system appended to it).
    """
    root = Path(directory)
    name = state.id
    if name.startswith(("/", "\\", "~")) or _problem_parts(name):
        raise DocumentError(f"the session id {name[:80]!r} cannot name a folder under {root}; export it under a plain key.")
    full = list(state.full_chat_history)
    results = {m.tool_call_id: m for m in full if isinstance(m, ToolMessage)}
    ledger = state.archives or {}
    done = sorted((ledger.get("done") or {}).items(), key=lambda item: item[1].get("start", 0))
    files: list[tuple[str, str, bool]] = []  # (path under root, text, compare by lines)
    for archive, record in done:
        if not isinstance(archive, str) or not _ARCHIVE.match(archive):
            raise DocumentError(f"the archive name {str(archive)[:80]!r} is not archive_NNN; nothing was written.")
        where = f"{name}/history/{archive}"
        files.append((f"{where}/messages.jsonl", _text_lines(full[record["start"] : record["end"]], results), True))
        files.append((f"{where}/.abstract.md", str(record.get("abstract", "")), False))
        files.append((f"{where}/.overview.md", str(record.get("overview", "")), False))
    as_read = ledger.get("openviking") or {}  # the session root's files as imported, written back as read
    for root_file in (".abstract.md", ".overview.md"):
        if isinstance(as_read.get(root_file), str):
            files.append((f"{name}/{root_file}", as_read[root_file], False))
    files.append((f"{name}/messages.jsonl", _text_lines(full[state.archived_through :], results), True))
    for message in full:
        if isinstance(message, ToolMessage):
            continue
        created = messages_to_line(message, results)["created_at"]
        for part in message_parts(message, results):
            if isinstance(part, ToolPart) and part.tool_status in ("completed", "error"):
                record = {"tool_id": part.tool_id, "tool_name": part.tool_name, "session_id": state.id,
                          "input": part.tool_input, "output": part.tool_output, "status": part.tool_status,
                          "time": {"created": created}}
                text = (as_read.get("tools") or {}).get(part.tool_id)
                if not (isinstance(text, str) and _same_tool(text, record)):  # as read, unless the tool changed since
                    text = json.dumps(record, ensure_ascii=False)
                files.append((f"{name}/tools/{folder_name(str(part.tool_id))}/tool.json", text, False))
    written = "".join(text for _, text, by_lines in files if by_lines)  # a commit moves live lines into an archive
    for path, text, by_lines in files:  # check all before writing any
        old = read_text(root, path, "export target")
        if old is not None and old != text and not (by_lines and covered(old, written)):
            raise StoreError(
                f"{root / path} changed since session_graph last read or wrote it (it holds what this export would drop); "
                "nothing was written. Import it again first (import_openviking(..., on_existing='replace')) or export "
                "into another folder."
            )
    for path, text, _ in files:
        replace_text(root, path, text, "export target")
    return root / name


def _problem_parts(name: str) -> bool:
    return any(part in ("", ".", "..") or "\x00" in part for part in name.replace("\\", "/").split("/"))


def covered(old: str, new: str) -> bool:
    """Whether every JSON line of ``old`` is also in ``new`` (compared as values, not bytes)."""
    def values(text: str) -> list[str] | None:
        out = []
        for line in text.split("\n"):
            if line.strip():
                try:
                    out.append(json.dumps(json.loads(line), sort_keys=True))
                except (ValueError, RecursionError):
                    return None
        return out

    mine, theirs = values(new), values(old)
    if mine is None or theirs is None:
        return False
    return not (Counter(theirs) - Counter(mine))


def _same_tool(text: str, record: dict[str, Any]) -> bool:
    """Whether a tool.json as read says what the session now holds (name, input, output, status)."""
    try:
        read = json.loads(text)
    except ValueError:
        return False
    return isinstance(read, dict) and all(read.get(k) == record[k] for k in ("tool_name", "input", "output", "status"))


def _text_lines(messages: list[BaseMessage], results: dict[str, ToolMessage]) -> str:
    lines = [dumps_line(messages_to_line(m, results)) for m in messages if not isinstance(m, ToolMessage)]
    return "".join(f"{line}\n" for line in lines)
