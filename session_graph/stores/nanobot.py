"""nanobot's session files, read and written without losing a field.

A nanobot session file is JSON lines: a metadata record (``_type: metadata``), in 0.3.x
perhaps a ``provider_state`` record, then one record per message (``role``, ``content``,
``timestamp`` and whatever else the agent stored: ``tool_calls``, ``reasoning_content``,
``tools_used``, ``latency_ms``, ``media``, ``_hidden_history``...). Three layouts exist:

- 0.1.x: ``~/.nanobot/sessions/<safe key>.jsonl``, no key in the file (``a:b`` and ``a_b``
  share a name, so a key is read from a name only with a warning, or given by ``key_for``);
- 0.2.x: ``<workspace>/sessions/<safe key>.jsonl``, the key in the metadata record;
- 0.3.x: ``<sessions root>/<workspace id>/<base64url key>.jsonl``, the key in the record and
  ``last_archived``: the messages before it are folded into ``metadata._last_summary``.

Records become messages, and back, in :mod:`session_graph.interop.nanobot`, losing nothing, so a
session read here and written back is byte-identical.
"""

from __future__ import annotations

import base64
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
import json
import logging
import os
from pathlib import Path
import re
from typing import Any
import warnings

from langchain_core.messages import BaseMessage

from session_graph.errors import DocumentError, MessageError, StoreError
from session_graph.interop.nanobot import archive_offset, nanobot_message, nanobot_record

__all__ = [
    "NanobotKeyWarning",
    "NanobotSessionFile",
    "nanobot_files",
    "read_nanobot_session",
    "write_nanobot_session",
]

log = logging.getLogger("session_graph.nanobot")

KeyFor = Callable[[Path], str]
_UNSAFE = re.compile(r'[<>:"/\\|?*]')  # nanobot's safe_filename


class NanobotKeyWarning(UserWarning):
    """A nanobot 0.1.x file carries no key and its name could stand for several."""


@dataclass
class NanobotSessionFile:
    """One nanobot session file as read.

    Attributes:
        path: where it was read.
        key: the session key (the file's own, ``key_for``'s, or read from its name).
        version: the layout family: ``"0.1"``, ``"0.2"`` or ``"0.3"``.
        header: the metadata record as written.
        records: other non-message records as written (0.3.x ``provider_state``).
        messages: ``(message, timestamp)`` per message record, in file order.
    """

    path: Path
    key: str
    version: str
    header: dict[str, Any]
    records: list[dict[str, Any]] = field(default_factory=list)
    messages: list[tuple[BaseMessage, str]] = field(default_factory=list)

    @property
    def archived(self) -> int:
        """nanobot's archive watermark: messages before it are not replayed."""
        return archive_offset(self.header, len(self.messages))

    @property
    def summary(self) -> str:
        """The summary that stands for the archived messages (0.3.x, some 0.2.x), or ``""``."""
        last = (self.header.get("metadata") or {}).get("_last_summary")
        return last.get("text") or "" if isinstance(last, dict) and isinstance(last.get("text"), str) else ""

    def meta(self) -> dict[str, Any]:
        """What a session keeps to write this file back: ``session.metadata["nanobot"]``."""
        return {"version": self.version, "file": self.path.name, "header": self.header, "records": self.records,
                "count": len(self.messages)}


def nanobot_files(path: str | os.PathLike[str]) -> list[Path]:
    """The session files at ``path``: the file itself, a folder's ``*.jsonl``, or, when it has
    none (0.3.x's sessions root), those of its subfolders.

    Raises:
        DocumentError: nothing there, or a folder with no session file in it or one level down.
    """
    root = Path(path)
    if root.is_file():
        return [root]
    if not root.is_dir():
        raise DocumentError(f"{root} does not exist; import_nanobot takes a session file or a folder of them.")
    found = sorted(_session_files(root))
    if not found:  # 0.3.x: <sessions root>/<workspace id>/<base64url key>.jsonl
        found = []
        for child in sorted(root.iterdir()):
            if not child.is_dir() or child.name.startswith("."):
                continue
            for file in sorted(_session_files(child)):
                if _is_storage_name(file.stem):
                    found.append(file)
                else:  # a pre-0.3 file 0.3.x copied in when it migrated a workspace: it never reads it
                    log.info("skipped %s: 0.3.x reads only base64url-named session files", file)
    if not found:
        raise DocumentError(
            f"{root} holds no nanobot session file (*.jsonl), neither directly (0.1.x, 0.2.x) nor one folder "
            "down (0.3.x: <sessions root>/<workspace id>/); point at nanobot's sessions folder or a file."
        )
    return found


def _is_storage_name(stem: str) -> bool:
    try:
        return storage_key(base64.urlsafe_b64decode(stem + "=" * (-len(stem) % 4)).decode("utf-8")) == stem
    except (ValueError, UnicodeDecodeError):
        return False


def _session_files(folder: Path) -> Iterator[Path]:
    return (file for file in folder.glob("*.jsonl") if file.is_file() and not file.name.startswith("."))


def read_nanobot_session(path: str | os.PathLike[str], key_for: KeyFor | None = None) -> NanobotSessionFile:
    """Read one nanobot session file.

    Args:
        path: the ``.jsonl`` file.
        key_for: ``file -> key or None`` for files that carry no key (nanobot 0.1.x); without
            it (or when it returns None) such a key is read from the name, with a
            :class:`NanobotKeyWarning` when that is ambiguous.

    Raises:
        StoreError: the file cannot be read.
        DocumentError: a line is not a JSON object or not a message (naming the file and line).
    """
    source = Path(path)
    try:
        lines = source.read_text(encoding="utf-8").split("\n")  # as nanobot reads: U+2028 and the like are text
    except (OSError, UnicodeDecodeError) as error:
        raise StoreError(f"cannot read the nanobot session {source}: {error}") from error
    header: dict[str, Any] = {}
    records: list[dict[str, Any]] = []
    messages: list[tuple[BaseMessage, str]] = []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        where = f"{source}:{number}"
        try:
            data = json.loads(line)
        except json.JSONDecodeError as error:
            raise DocumentError(f"{where} is not JSON ({error}); fix or remove that line.") from error
        if not isinstance(data, dict):
            raise DocumentError(f"{where} is not a JSON object; fix or remove that line.")
        kind = data.get("_type")
        if kind == "metadata":
            header = data
        elif kind is not None:
            records.append(data)
        else:
            try:
                messages.append((nanobot_message(data, where), str(data.get("timestamp") or "")))
            except MessageError as error:
                raise DocumentError(str(error)) from error
    version = _version(source, header)
    key = header.get("key") if isinstance(header.get("key"), str) and header.get("key") else None
    if key is None and key_for is not None:
        key = key_for(source)
        if key is not None and (not isinstance(key, str) or not key):
            raise DocumentError(f"key_for({source}) returned {key!r}; it must return a non-empty string key, or None.")
    if key is None:
        key = _key_from_name(source)
    return NanobotSessionFile(source, key, version, header, records, messages)


def _version(source: Path, header: dict[str, Any]) -> str:
    if "last_archived" in header or (isinstance(header.get("key"), str) and source.stem == storage_key(header["key"])):
        return "0.3"
    return "0.2" if "key" in header else "0.1"


def _key_from_name(source: Path) -> str:
    """A 0.1.x file's key from its name: nanobot wrote ``key.replace(":", "_")`` minus unsafe characters."""
    stem = source.stem
    if "_" not in stem:
        return stem
    key = stem.replace("_", ":", 1)
    message = (f"{source} carries no session key (nanobot 0.1.x) and its name fits several ('{key}', '{stem}', ...); "
               f"imported as '{key}'. Pass key_for=<file -> key> (CLI: --key-map FILE) to choose.")
    warnings.warn(message, NanobotKeyWarning, stacklevel=4)
    return key


def storage_key(key: str) -> str:
    """0.3.x's file stem: the key, base64url without padding."""
    return base64.urlsafe_b64encode(key.encode()).decode().rstrip("=")


def safe_key(key: str) -> str:
    """0.1.x/0.2.x's file stem: ``:`` and unsafe characters as ``_``."""
    return _UNSAFE.sub("_", key.replace(":", "_")).strip()


# -- files ----------------------------------------------------------------------------------
def write_nanobot_session(
    key: str, messages: list[tuple[BaseMessage, str]], meta: dict[str, Any] | None, metadata: dict[str, Any],
    created_at: str, updated_at: str, directory: str | os.PathLike[str],
) -> Path:
    """Write a session as a nanobot file under ``directory``; returns its path.

    A session read from nanobot goes back to its own file name, header and records (its
    ``updated_at`` moves only when messages were added); any other one is written in 0.3.x's
    shape (base64url name, key and ``last_archived`` in the header), which 0.2.x reads too.
    """
    folder = Path(directory)
    folder.mkdir(parents=True, exist_ok=True)
    if meta:
        header = dict(meta["header"])
        version, name, records = meta.get("version", "0.3"), meta["file"], meta.get("records") or []
        if len(messages) != meta.get("count", len(messages)) and "updated_at" in header:
            header["updated_at"] = messages[-1][1] or updated_at
    else:
        version, name, records = "0.3", f"{storage_key(key)}.jsonl", []
        header = {"_type": "metadata", "key": key, "created_at": created_at, "updated_at": updated_at,
                  "metadata": metadata, "last_archived": 0, "last_consolidated": 0}
    target = folder / name
    temporary = target.with_name(f".{target.name}.tmp")
    lines = [header, *records, *(nanobot_record(message, stamp) for message, stamp in messages)]
    ascii_only = version == "0.1"  # 0.1.x wrote json.dumps defaults; later versions ensure_ascii=False
    try:
        with open(temporary, "w", encoding="utf-8") as out:
            out.writelines(json.dumps(line, ensure_ascii=ascii_only) + "\n" for line in lines)
        os.replace(temporary, target)
    except OSError as error:
        temporary.unlink(missing_ok=True)
        raise StoreError(f"cannot write the nanobot session {target}: {error}") from error
    return target
