"""The JSONL store's log format, read: records, reset markers, offsets, torn lines and quarantine.

A log line is a message record (``{"id": ..., "message": {...}, ..., "seq": n}``), a reset
marker (``{"_type": "reset"}``, left by ``Session.clear``) or a state line (``jsonl_state``).
Every 1,000th record's byte offset is kept in the meta file, so a read can seek to the window
or to a range of ids. A torn last line (a crash mid-write) is cut or skipped with a warning;
any other line that is not a record is copied to ``<name>.quarantine.jsonl`` and skipped.
These are module functions of paths and bytes; ``JsonlStore`` (``stores.jsonl``) holds the
locks and writes.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
import contextlib
import json
import logging
import os
from pathlib import Path
import re
from typing import Any
import warnings

try:  # installed with langchain-core (through langsmith) on CPython; 5x faster to decode
    from orjson import loads as _loads
except ImportError:  # pragma: no cover
    _loads = json.loads

from session_graph._base.files import last_newline
from session_graph._base.gc import paused_gc
from session_graph._base.paths import inside
from session_graph.errors import StoreError
from session_graph.stores.jsonl_state import FAST_DUMPS, InFlight, dumps, is_state_line
from session_graph.stores.records import LineRecords

logger = logging.getLogger(__name__)


def recovered(message: str, stacklevel: int) -> None:
    """Report a store recovery: a RuntimeWarning, and a warning on the package's logger."""
    warnings.warn(message, RuntimeWarning, stacklevel=stacklevel)
    logger.warning("%s", message)


_SEQ = re.compile(rb'"seq": (\d+)}\s*$')
RESET = "reset"

OFFSET_STEP = 1000
"""Every 1,000th record's byte offset is kept in the meta file (``offsets``), so a load can
seek to the window instead of reading the whole log."""
_RESET_MARK = b'{"_type": "reset"'
_ID = re.compile(rb'\{"id": "([^"\\]*)"')
_IDS = re.compile(rb'\n\{"id": "([^"\\]*)"')  # a literal prefix: re finds it fast (re.M with ^ is 3x slower)


def read_meta(meta: Path) -> dict[str, Any] | None:
    """The meta file's state document, or None when there is none."""
    try:
        text = meta.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as error:
        raise StoreError(f"cannot read {meta}: {error}") from error
    try:
        state = json.loads(text)
    except (ValueError, RecursionError) as error:  # JSONDecodeError, UnicodeDecodeError
        raise StoreError(f"{meta} is not valid JSON ({error}); restore it from a backup or delete it.") from None
    if not isinstance(state, dict):
        raise StoreError(f"{meta} does not hold a session state document.")
    return state


def settle(log: Path, state: dict[str, Any] | None) -> tuple[int, int, int, int]:
    """(records, bytes, lines, markers) of the log now; cuts a torn last line left by a crashed
    writer. ``lines``, ``markers``: what ``stores.jsonl_tail.after_state`` says of the lines after
    the state (read here once, in the same pass that counts them)."""
    try:
        size = os.stat(log).st_size
    except FileNotFoundError:
        return 0, 0, 0, 0
    count, known = int((state or {}).get("message_count", 0)), int((state or {}).get("bytes", 0))
    after = markers = 0
    if state is not None and size == known:  # as the last state left it: no torn line, nothing uncounted
        return count, size, after, markers
    with open(log, "rb+") as handle:
        if size and (handle.seek(size - 1), handle.read(1))[1] != b"\n":
            tail = last_newline(handle, size)
            recovered(f"{log}: dropping a torn last line left by an interrupted write.", 4)
            handle.truncate(tail)
            size = tail
        if size != known or state is None:  # lines written after the last state (or unknown): count them
            handle.seek(known if 0 < known <= size else 0)
            after, count, markers = tally(handle, count if 0 < known <= size else 0)
            after, markers = (after, markers) if 0 < known <= size else (0, 0)  # counted from the start: none after a state
    return count, size, after, markers


def tally(lines: Iterable[bytes], count: int) -> tuple[int, int, int]:
    """(lines, records, markers) of whole log lines after a state holding ``count`` records: the
    lines that are no state line, the record count with them (a reset marker empties it) and
    the reset markers among them (``settle``, ``stores.jsonl_tail``)."""
    read = markers = 0
    for line in lines:
        if is_reset(line):
            count, read, markers = 0, read + 1, markers + 1
        elif line.strip() and not is_state_line(line):
            count, read = count + 1, read + 1
    return read, count, markers


def decode(log: Path, since: int, offsets: list[list[int]] | None = None, *, settled: bool = True
           ) -> tuple[LineRecords, list[tuple[int, bytes]]]:
    """The records of a log from ``seq`` ``since`` on (a reset marker empties what came before),
    and the lines that are no record, numbered from 0 (the caller quarantines them).

    ``offsets``: the log's record offsets, when they are known to describe it (the state's
    ``bytes`` is the log's size): the read then starts at the last offset at or before ``since``
    instead of the top of the file, so reading what another writer added costs what it added.
    ``settled=False`` (read without the session's lock): a last line not ended yet may be a save
    in flight, so ``InFlight`` is raised instead of dropping it (the caller reads under the lock).
    The records are decoded one at a time when read (``LineRecords``): each line is decoded here
    only to check it, and its objects are freed before the next line's are made.
    """
    seek = max((o for o in offsets or () if o[0] <= since), key=lambda o: o[0], default=None) if since else None
    try:
        if seek is not None:
            with open(log, "rb") as handle:
                handle.seek(int(seek[1]))
                raw = handle.read()
        else:
            raw = log.read_bytes()
    except FileNotFoundError:
        return LineRecords(b"", _loads), []
    except OSError as error:
        raise StoreError(f"cannot read {log}: {error}") from error
    if seek is None and raw.startswith(b"\xef\xbb\xbf"):  # a BOM an editor saved the log with: blanks, so offsets hold
        raw = b"   " + raw[3:]
    end = raw.rfind(b"\n") + 1
    if end < len(raw) and not settled:
        raise InFlight
    if end < len(raw):  # b"" when the file ends with a newline
        recovered(f"{log}: dropping a torn last line (an interrupted write).", 4)
    records = LineRecords(raw, _loads)
    bad: list[tuple[int, bytes]] = []
    for number, (start, stop) in enumerate(_spans(raw, end)):
        line = raw[start:stop]
        if not line.strip() or is_state_line(line):
            continue
        if since and b'"_type"' not in line:  # skip what the caller holds without decoding it
            seq = _SEQ.search(line)
            if seq is not None and int(seq.group(1)) < since:
                continue
        try:
            record = _loads(line)
            if not is_record(record):
                raise ValueError("not a record")
        except ValueError:
            bad.append((number, line))
            continue
        if record.get("_type") == RESET:
            records.clear()
        else:
            records.add(start, stop)
        del record  # freed before the next line is decoded: its memory is reused, not left in holes
    if bad and seek is not None:  # line numbers count from the top of the file: read it all
        return decode(log, since)
    return records, bad


def window_records(log: Path, state: dict[str, Any]) -> list[dict[str, Any]] | None:
    """Record 0 and the records from the state's ``window_start`` on, read by seeking through
    the meta file's offsets; None when they cannot be trusted (the caller reads it all)."""
    start, offsets = int(state.get("window_start", 0) or 0), state.get("offsets") or []
    if start < 2 or not offsets or offsets[0][0] != 0:
        return None
    try:
        if log.stat().st_size != int(state.get("bytes", -1)):
            return None  # lines written after the state (a crash, another version): the full read settles them
        seek = max((o for o in offsets if o[0] <= start), key=lambda o: o[0])
        with paused_gc(), open(log, "rb") as handle:
            handle.seek(int(offsets[0][1]))
            first = _loads(handle.readline())
            handle.seek(int(seek[1]))
            raw = handle.read()
    except (OSError, ValueError, TypeError, IndexError):
        return None
    records = [first]
    with paused_gc():
        for line in raw.split(b"\n"):
            if not line.strip() or is_state_line(line):
                continue
            seq = _SEQ.search(line)
            if seq is not None and int(seq.group(1)) < start:
                continue
            try:
                record = _loads(line)
            except ValueError:
                return None
            if not is_record(record) or record.get("_type") == RESET:
                return None
            records.append(record)
    if not is_record(first) or first.get("seq") != 0 or len(records) < 2 or records[1].get("seq") != start:
        return None
    if len(records) - 1 != int(state.get("message_count", 0)) - start:  # seqs not positions (a line removed by hand
        return None  # or quarantined, records appended after it): the window's start, a position, is no seq there
    return records


def read_ids(log: Path, state: dict[str, Any], start: int, stop: int) -> list[str | None]:
    """The ids of the records ``start .. stop - 1`` without decoding their messages (one
    pattern over the bytes between the state's offsets; line by line if that misfits)."""
    offsets = state.get("offsets") or []
    try:
        size = log.stat().st_size
        trusted = offsets and offsets[0][0] == 0 and size == int(state.get("bytes", -1))
        begin = max((o for o in offsets if o[0] <= start), key=lambda o: o[0]) if trusted else [0, 0]
        end = min((o for o in offsets if o[0] >= stop), key=lambda o: o[0], default=None) if trusted else None
        with open(log, "rb") as handle:
            handle.seek(int(begin[1]))
            raw = handle.read(int(end[1]) - int(begin[1]) if end is not None else -1)
    except FileNotFoundError:
        return []
    except (OSError, ValueError, TypeError, IndexError) as error:
        raise StoreError(f"cannot read {log}: {error}") from error
    if trusted:
        head = _ID.match(raw)  # the first line starts at the offset; the others after a newline
        found = ([head.group(1)] if head else []) + _IDS.findall(raw)
        records = (int(end[0]) if end is not None else int(state.get("message_count", -1))) - int(begin[0])
        if len(found) == records and _RESET_MARK not in raw:
            first = int(begin[0])
            return [i.decode() for i in found[start - first : stop - first]]
    ids: list[str | None] = []
    for line in raw.split(b"\n"):
        if not line.strip() or is_state_line(line):
            continue
        if b'"_type"' in line and is_reset(line):
            ids = []
            continue
        seq = _SEQ.search(line)
        number = int(seq.group(1)) if seq is not None else None
        if number is not None and number < start:
            continue
        if number is not None and number >= stop:
            break
        match = _ID.match(line)
        ids.append(match.group(1).decode() if match else (_loads(line).get("id") if line.startswith(b"{") else None))
    return ids


def quarantine_path(root: Path, log: Path, key: str) -> Path:
    """``<name>.quarantine.jsonl`` beside the log, checked to lie inside the store."""
    quarantine = log.with_name(log.name.replace(".jsonl", ".quarantine.jsonl"))
    inside(root, quarantine.relative_to(root), f"quarantine of session {key!r}")
    return quarantine


def quarantine_lines(root: Path, key: str, log: Path, bad: list[tuple[int, bytes]], *, write: bool,
                     lock: contextlib.AbstractContextManager[Any]) -> None:
    """Copy the lines ``bad`` (number, bytes) to the log's quarantine file, each once, and warn;
    ``write=False`` (a store opened for reading) only warns. ``lock``: held while writing."""
    quarantine = quarantine_path(root, log, key)
    if not write:  # opened for reading only: report, write nothing
        recovered(f"{log}: {len(bad)} corrupt line(s) skipped.", 4)
        return
    with lock:
        seen = set()
        if quarantine.exists():
            for line in quarantine.read_text().splitlines():
                with contextlib.suppress(ValueError):
                    seen.add(json.loads(line)["line"])
        fresh = [(n, raw) for n, raw in bad if n not in seen]
        if fresh:
            with open(quarantine, "a") as handle:
                for number, raw in fresh:
                    handle.write(json.dumps({"line": number, "raw": raw.decode(errors="replace")}) + "\n")
    recovered(
        f"{log}: {len(bad)} corrupt line(s) skipped (lines {', '.join(str(n + 1) for n, _ in bad[:5])}); "
        f"copies are in {quarantine.name}.", 4)


def offsets_of(old: dict[str, Any] | None, count: int, size: int) -> list[list[int]] | None:
    """The offsets the last state recorded, if they still describe the log (None: rebuild them)."""
    if old is None:
        return [] if count == 0 else None
    offsets = old.get("offsets")
    if not isinstance(offsets, list) or int(old.get("bytes", -1)) != size or int(old.get("message_count", -1)) != count:
        return None
    if count and not offsets:
        return None
    return list(offsets)  # a new list to grow; its [count, position] pairs are never changed, so shared


def scan_offsets(log: Path) -> list[list[int]]:
    """The offsets of a log, read once from its lines (a log from an older version)."""
    offsets: list[list[int]] = []
    count = position = 0
    try:
        with open(log, "rb") as handle:
            for line in handle:
                if is_reset(line):
                    offsets, count = [], 0
                elif line.strip() and not is_state_line(line):
                    if count % OFFSET_STEP == 0:
                        offsets.append([count, position])
                    count += 1
                position += len(line)
    except FileNotFoundError:
        return []
    return offsets


def _spans(raw: bytes, end: int) -> Iterator[tuple[int, int]]:
    """The (start, stop) of each line of ``raw[:end]``, one by one."""
    start = 0
    while start < end:
        stop = raw.index(b"\n", start)
        yield start, stop
        start = stop + 1


def log_size(log: Path) -> int:
    """The log's size in bytes (0 when there is none yet)."""
    try:
        return os.stat(log).st_size
    except FileNotFoundError:
        return 0


def is_record(record: Any) -> bool:
    """A message record (or the reset marker): anything else in a log is quarantined, never loaded."""
    if not isinstance(record, dict):
        return False
    if record.get("_type") == RESET:
        return True
    message = record.get("message")
    return isinstance(message, dict) and message.get("type") in _MESSAGE_TYPES and isinstance(message.get("data"), dict)


_MESSAGE_TYPES = frozenset({"human", "ai", "system", "tool", "function", "chat", "HumanMessageChunk", "AIMessageChunk",
                            "SystemMessageChunk", "ToolMessageChunk", "FunctionMessageChunk", "ChatMessageChunk"})
"""The message types langchain-core loads; a record of any other type (a newer library's, a
hand edit) is quarantined like a damaged line instead of making the whole session unloadable."""


def is_reset(line: bytes) -> bool:
    """Whether a log line is the reset marker ``Session.clear`` leaves."""
    if b'"_type"' not in line:  # cheap test first: message records never have one
        return False
    try:
        record = _loads(line)
    except ValueError:
        return False
    return isinstance(record, dict) and record.get("_type") == RESET


def record_lines(records: list[dict[str, Any]], count: int, position: int, offsets: list[list[int]],
                 lines: list[bytes]) -> tuple[int, int]:
    """``records`` as log lines (numbered from ``count``) added to ``lines``, an offset noted every
    ``OFFSET_STEP`` records; returns the count and the log position after them."""
    for record in records:
        if count % OFFSET_STEP == 0:
            offsets.append([count, position])
        lines.append(record_line(record, count))
        position += len(lines[-1])
        count += 1
    return count, position


def record_line(record: dict[str, Any], seq: int) -> bytes:
    """One record's log line, ``{"id": ..., ..., "seq": n}``: the top level spelled as ``json.dumps``
    spells it (``_ID``, ``_IDS`` and ``_SEQ`` find the id and the seq in the bytes), each value
    encoded by orjson (the message dict in one C call; compact inside, as any JSON reader takes it)."""
    if len(record) == 4 and tuple(record) == _STANDARD:  # message_record's: one format, no per-field loop
        try:  # each value in one C call (what dumps does first, without its frame)
            return _LINE % (FAST_DUMPS(record["id"]), FAST_DUMPS(record["ts"]), FAST_DUMPS(record["role"]),
                            FAST_DUMPS(record["message"]), seq)
        except TypeError:  # a value orjson refuses: dumps' fallback
            return _LINE % (dumps(record["id"]), dumps(record["ts"]), dumps(record["role"]), dumps(record["message"]), seq)
    fields = [json.dumps(name, ensure_ascii=False).encode() + b": " + dumps(value) for name, value in record.items() if name != "seq"]
    return b"{" + b", ".join([*fields, b'"seq": %d' % seq]) + b"}\n"


_STANDARD = ("id", "ts", "role", "message")
_LINE = b'{"id": %b, "ts": %b, "role": %b, "message": %b, "seq": %d}\n'
