"""The JSONL store's terms files: their line format, and reading a log into it.

A terms file (``<name>.terms`` beside ``<name>.jsonl``) starts with a header line (format,
tokenizer version, the session key), then one line per log line: a message's seq, its byte
offset and length in the log, id, role, ts and retrieval terms; a reset marker's offset and
length; or a skipped (corrupt) line's. Every line is ``<crc32 hex> <json>``, so a damaged line
is known as such, and the offsets tile the log, so a gap or a foreign file is too.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any
import zlib

from session_graph._base.files import decode_name
from session_graph.retrieval.tokenize import TOKENIZER, terms

try:
    from orjson import loads as _loads
except ImportError:  # pragma: no cover
    _loads = json.loads

__all__ = ["HEADER", "entry_line", "file_mark", "header_line", "key_of_log", "line_end", "parse_line", "record_text", "reset_line", "scan_log", "skip_line", "tail_of", "terms_path"]

HEADER = "sg-search-1"


def record_text(record: dict[str, Any]) -> str:
    """The searchable text of a stored message record: its text parts, and the names and
    arguments of its tool calls (an assistant turn that only calls a tool still says what for)."""
    message = record.get("message")
    data = message.get("data") if isinstance(message, dict) else None
    if not isinstance(data, dict):
        return ""
    content = data.get("content")
    if isinstance(content, str):
        parts = [content]
    elif isinstance(content, list):
        parts = [p if isinstance(p, str) else str(p.get("text", "")) for p in content
                 if isinstance(p, str) or (isinstance(p, dict) and p.get("type") == "text")]
    else:
        parts = []
    for call in data.get("tool_calls") or ():
        if isinstance(call, dict):
            parts.append(f"{call.get('name', '')} {json.dumps(call.get('args', {}), ensure_ascii=False)}")
    return "\n".join(p for p in parts if p)


def terms_path(log_path: Path) -> Path:
    """The terms file of a log (``x.jsonl`` -> ``x.terms``)."""
    return log_path.with_name(log_path.name[: -len(".jsonl")] + ".terms")


def _line(document: dict[str, Any]) -> bytes:
    body = json.dumps(document, ensure_ascii=False, separators=(",", ":")).encode()
    return b"%08x " % zlib.crc32(body) + body + b"\n"


def parse_line(line: bytes) -> dict[str, Any] | None:
    """A terms line's document, or None when it is damaged."""
    if len(line) < 10 or line[8:9] != b" ":
        return None
    body = line[9:].rstrip(b"\n")
    try:
        if int(line[:8], 16) != zlib.crc32(body):
            return None
        document = _loads(body)
    except ValueError:
        return None
    return document if isinstance(document, dict) else None


def skip_line(offset: int, size: int, seq: int | None = None) -> bytes:
    """The line of a log line that holds no message (a state line, a quarantined line): covered,
    not indexed; ``seq``: the next message's seq (so a writer can resume from the file's end)."""
    return _line({"skip": 1, "o": offset, "n": size} if seq is None else {"skip": 1, "o": offset, "n": size, "s": seq})


def reset_line(offset: int, size: int) -> bytes:
    """The line of a reset marker at ``offset`` (``size`` bytes) in the log."""
    return _line({"reset": 1, "o": offset, "n": size})


def header_line(key: str) -> bytes:
    """The first line of a session's terms file."""
    return _line({"h": HEADER, "tokenizer": TOKENIZER, "key": key})


def entry_line(record: dict[str, Any], seq: int, offset: int, size: int) -> bytes:
    return _line({"s": seq, "o": offset, "n": size, "id": record.get("id"), "r": record.get("role", ""),
                  "ts": record.get("ts", ""), "t": " ".join(terms(record_text(record)))})


def scan_log(log_path: Path, start: int, seq: int) -> list[bytes]:
    """Terms lines for the complete log lines from byte ``start`` on (seq numbering from ``seq``)."""
    with open(log_path, "rb") as handle:
        handle.seek(start)
        raw = handle.read()
    raw = raw[: raw.rfind(b"\n") + 1]
    out, position = [], start
    for line in raw.splitlines(keepends=True):
        try:
            record = _loads(line)
        except ValueError:
            record = None
        if isinstance(record, dict) and record.get("_type") == "reset":
            out.append(reset_line(position, len(line)))
            seq = 0
        elif isinstance(record, dict) and isinstance(record.get("message"), dict):
            out.append(entry_line(record, seq, position, len(line)))
            seq += 1
        else:  # a corrupt line the store quarantines: covered, not indexed
            out.append(skip_line(position, len(line), seq))
        position += len(line)
    return out


def file_mark(path: Path) -> tuple[int, int, int]:
    """What tells a terms file changed since we wrote it: inode, size, mtime (all -1: missing)."""
    try:
        st = os.stat(path)
    except OSError:
        return (-1, -1, -1)
    return (st.st_ino, st.st_size, st.st_mtime_ns)


def tail_of(path: Path) -> tuple[int, int] | None:
    """(the log byte the terms file covers up to, the next message's seq), from its last line
    (None: missing, damaged, or a last line that does not say the seq)."""
    try:
        with open(path, "rb") as handle:
            size = handle.seek(0, os.SEEK_END)
            if size == 0:
                return None
            back = min(size, 65536)
            while True:
                handle.seek(size - back)
                tail = handle.read(back)
                cut = tail.rfind(b"\n", 0, len(tail) - 1)
                if cut >= 0 or back == size:
                    break
                back = min(size, back * 4)
    except FileNotFoundError:
        return None
    document = parse_line(tail[cut + 1 :])
    return None if document is None or not tail.endswith(b"\n") else line_end(document)


def line_end(document: dict[str, Any]) -> tuple[int, int] | None:
    """(log end, next seq) after a terms line's document, None when it does not say."""
    if "h" in document:
        return 0, 0
    offset, length, seq = document.get("o"), document.get("n"), document.get("s")
    if not isinstance(offset, int) or not isinstance(length, int):
        return None
    if "reset" in document:
        return offset + length, 0
    if not isinstance(seq, int):
        return None  # a skip line of an older version: the seq is not known here
    return offset + length, seq if "skip" in document else seq + 1


def key_of_log(folder: Path, name: str) -> str:
    """The session key of a log file name (its meta file says it when the name does not decode)."""
    stem = name[: -len(".jsonl")]
    key = decode_name(stem)
    if key is not None:
        return key
    try:
        return str(json.loads((folder / f"{stem}.meta.json").read_bytes()).get("key") or stem)
    except (OSError, ValueError, AttributeError):
        return stem
