"""The embedded default store: a directory of JSONL files, append-only.

Per session: ``<name>.jsonl`` (one line per message: seq, id, UTC ts, the message) and
``<name>.meta.json`` (the state, rewritten atomically: temp file, fsync, rename, fsync of
the directory). Saving a turn appends its lines; the transcript is never rewritten. A
``<name>.lock`` file takes an exclusive ``flock`` around every ``update`` (the caller's function
runs inside it), across processes.

File names are reversible and collision-free: the key is percent-encoded, capitals
included (``A`` -> ``%41``, so case-insensitive file systems cannot merge two keys); a
name that would pass 200 bytes is a SHA-256 instead, and the key lives in the meta file.
On load, a torn last line (a crash mid-write) is dropped with a warning; a corrupt line
in the middle is copied to ``<name>.quarantine.jsonl`` and skipped, never the reason a
session loads empty or gets overwritten.
"""

from __future__ import annotations

from collections.abc import Iterator
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

from session_graph._base.files import decode_name, encode_name, last_newline, lock_file, unlock_file
from session_graph._base.gc import paused_gc
from session_graph._base.paths import fresh_file, inside
from session_graph.errors import StoreError
from session_graph.stores.base import (
    SearchHit,
    SessionInfo,
    Snapshot,
    StoreBase,
    StoredSession,
    UpdateFn,
    check_change,
    check_key,
    check_schema,
    resets,
)
from session_graph.stores.jsonl_state import (
    MetaCache,
    Written,
    current_state,
    dumps,
    encode,
    is_state_line,
    meta_bytes,
    state_line,
)
from session_graph.stores.search_index import JsonlSearch

__all__ = ["JsonlStore"]

logger = logging.getLogger(__name__)


def _recovered(message: str, stacklevel: int) -> None:
    """Report a store recovery: a RuntimeWarning, and a warning on the package's logger."""
    warnings.warn(message, RuntimeWarning, stacklevel=stacklevel)
    logger.warning("%s", message)

_SEQ = re.compile(rb'"seq": (\d+)}\s*$')
_RESET = "reset"


class JsonlStore(StoreBase):
    """Sessions as JSONL files in a directory (``./.session_graph/`` by default).

    Args:
        path: the directory; created if missing.
        fsync: flush every write to disk (turn off only for throwaway data).
        create: False never creates the directory (reading only).
    """

    def __init__(self, path: str | os.PathLike[str] = ".session_graph", *, fsync: bool = True, create: bool = True) -> None:
        root = Path(path)
        if root.exists() and not root.is_dir():
            raise StoreError(f"{root} is a file; a JSONL store needs a directory. Pick another path.")
        if not create and not root.is_dir():
            raise StoreError(f"there is no session store at {root} (the directory does not exist); nothing was created.")
        try:
            root.mkdir(parents=True, exist_ok=True)
        except OSError as error:
            raise StoreError(f"cannot create the store directory {root}: {error}") from error
        if not os.access(root, os.W_OK | os.X_OK):
            raise StoreError(f"no permission to write in {root}; pick a writable directory.")
        self.root = root
        self.fsync = fsync
        self.create = create
        self.search_index = JsonlSearch(self)  # ranked search: a terms file per log, kept on append
        self._written = MetaCache()
        self._known_paths: dict[tuple[str, str], tuple[Path, Path, Path]] = {}

    def __repr__(self) -> str:
        return f"JsonlStore({str(self.root)!r})"

    # -- paths -------------------------------------------------------------------------------
    def _dir(self, tenant: str) -> Path:
        return self.root / encode_name(check_key(tenant, "tenant"))

    def _paths(self, tenant: str, key: str) -> tuple[Path, Path, Path]:
        known = self._known_paths.get((tenant, key))  # a key's names are checked and encoded once
        if known is not None:
            return known
        base = self._dir(tenant) / encode_name(check_key(key))
        paths = (base.with_name(base.name + ".jsonl"), base.with_name(base.name + ".meta.json"), base.with_name(base.name + ".lock"))
        for path in paths:  # none is (or lies in) a symbolic link: no read or rewrite reaches outside the store
            inside(self.root, path.relative_to(self.root), f"file of session {key!r}")
        if len(self._known_paths) > 4096:
            self._known_paths.clear()
        self._known_paths[(tenant, key)] = paths
        return paths

    @contextlib.contextmanager
    def _locked(self, tenant: str, key: str) -> Iterator[tuple[Path, Path]]:
        log, meta, lock = self._paths(tenant, key)
        try:
            lock.parent.mkdir(parents=True, exist_ok=True)
            handle = open(lock, "a")  # noqa: SIM115 - held for the duration of the lock
        except OSError as error:
            raise StoreError(f"cannot lock session {key!r} in {self.root}: {error}") from error
        try:
            lock_file(handle)
            yield log, meta
        finally:
            unlock_file(handle)
            handle.close()

    # -- protocol ------------------------------------------------------------------------------
    defers_sync = True  # update(..., sync=False) writes without an fsync (a later synced write flushes it)

    def update(self, tenant: str, key: str, fn: UpdateFn, *, since: int | None = None, sync: bool = True) -> int:
        """Run ``fn`` on the stored session under the session's file lock and write its change (see ``SessionStore.update``)."""
        with self._locked(tenant, key) as (log, meta):
            old, written, on_disk = self._written.get(meta)  # the document this store wrote last, if nobody wrote since
            mine = old is not None and int(old.get("bytes", -1)) == _size(log)
            if not mine:
                old, written = self._current(log, meta), None
            if old is not None:
                check_schema(old, str(meta))
            stored = int((old or {}).get("version", 0))
            count, size = self._settle(log, old)
            records = self._records(tenant, key, log, since, locked=True) if since is not None and since < count else []
            change = check_change(fn(StoredSession(key, old, stored, count, records)), fn)
            if change is None:
                return stored
            state = change.state
            offsets = _offsets_of(old, count, size) if not change.reset else []
            if offsets is None:  # written by an older version, or lines came after the last state: index the log once
                offsets = _scan_offsets(log)
            lines: list[bytes] = []
            position = start = size
            if change.reset:
                lines.append((json.dumps({"_type": _RESET, "ts": state.get("updated_at")}) + "\n").encode())
                position += len(lines[-1])
                count = 0
            for record in change.records:
                if count % _OFFSET_STEP == 0:
                    offsets.append([count, position])
                lines.append((json.dumps({**record, "seq": count}, ensure_ascii=False) + "\n").encode())
                position += len(lines[-1])
                count += 1
            version = stored + 1
            document = {**state, "key": key, "tenant": tenant, "message_count": count, "version": version,
                        "resets": resets(old) + change.reset}
            if old is not None:
                document["created_at"] = old.get("created_at", document.get("created_at"))
            document["state_lines"] = 1  # the log holds this document's state lines (meta file only)
            encoded = encode(document, written)
            base = written if mine else (encode(old, None) if old is not None and old.get("state_lines") == 1 else None)
            lines.append(state_line(encoded, base))  # what changed since the state the log ends with, else all of it
            position += len(lines[-1])
            with open(log, "ab") as handle:  # the records and the state they make, in one write and one fsync
                handle.write(b"".join(lines))
                handle.flush()
                if self.fsync and sync:
                    os.fsync(handle.fileno())
            size = _size(log)
            self.search_index.appended(log, key, start, lines, count - len(change.records), change.records, change.reset)
            document["offsets"], document["bytes"] = (offsets if size == position else []), size
            encoded.fields["offsets"], encoded.fields["bytes"] = dumps(document["offsets"]), dumps(size)
            if mine and not change.reset and size - on_disk < _META_LAG:  # the log's state lines say the rest
                self._written.put(meta, document, encoded, on_disk)
            else:
                self._replace(meta, document, encoded)
            return version

    reads_windows = True  # read(window=True) seeks to the window through the offsets in the meta file

    def read(self, tenant: str, key: str, *, since: int = 0, window: bool = False) -> Snapshot | None:
        """The stored session, or None; ``since``: records from that ``seq`` on; ``window``: record 0 and the records from the window on."""
        log, meta, _ = self._paths(tenant, key)
        state = self._current(log, meta)
        if state is not None:
            check_schema(state, str(meta))
        if window and state is not None:
            records = self._window_records(log, state)
            if records is not None:
                return Snapshot(key, state, records, int(state.get("version", 0)))
        records = self._records(tenant, key, log, since)
        if state is None and not records:
            return None
        if state is None:
            _recovered(f"{meta} is missing; loading the {len(records)} messages of {log} without it.", 3)
            state = {"message_count": len(records)}
        return Snapshot(key, state, records, int(state.get("version", 0)))

    def version(self, tenant: str, key: str) -> int | None:
        """The stored version (from the meta file alone), or None if the session is not stored."""
        log, meta, _ = self._paths(tenant, key)
        written = self._written.get(meta)[0]
        state = written if written is not None and written.get("bytes") == _size(log) else self._current(log, meta)
        if state is None:  # a transcript without its meta file is still a session
            return 0 if log.exists() and log.stat().st_size else None
        return int(state.get("version", 0))

    def delete(self, tenant: str, key: str) -> bool:
        """Remove a session's log and meta files; False if there was none."""
        log, meta, _ = self._paths(tenant, key)
        if not log.exists() and not meta.exists():
            return False  # nothing to delete: take no lock, create nothing
        with self._locked(tenant, key) as (log, meta):
            found = False
            quarantine = log.with_name(log.name.replace(".jsonl", ".quarantine.jsonl"))
            inside(self.root, quarantine.relative_to(self.root), f"quarantine of session {key!r}")
            self._written.forget(meta)
            for path in (log, meta, quarantine):
                if path.exists():
                    path.unlink()
                    found = True
            self.search_index.deleted(log)
            return found

    def list(self, tenant: str) -> list[SessionInfo]:
        """Every session of a tenant, newest ``updated_at`` first."""
        folder = self._dir(tenant)
        infos = []
        if folder.is_dir():
            inside(self.root, folder.relative_to(self.root), f"folder of tenant {tenant!r}")
        for meta in folder.glob("*.meta.json") if folder.is_dir() else []:
            if meta.is_symlink():
                _recovered(f"{meta} is a symbolic link; the store never follows links, so it is not listed.", 3)
                continue
            state = self._current(meta.with_name(meta.name[: -len(".meta.json")] + ".jsonl"), meta)
            if state is None:
                continue
            key = state.get("key") or decode_name(meta.name[: -len(".meta.json")]) or meta.name
            infos.append(SessionInfo(key, state.get("created_at", ""), state.get("updated_at", ""),
                                     int(state.get("message_count", 0)), dict(state.get("metadata") or {})))
        return sorted(infos, key=lambda info: info.updated_at, reverse=True)

    def search(self, tenant: str, text: str, limit: int = 100) -> list[SearchHit]:
        """Messages of a tenant containing ``text`` (case-insensitive), at most ``limit``."""
        from session_graph.stores.codec import message_text, record_message

        needle = text.casefold()
        hits: list[SearchHit] = []
        for info in self.list(tenant):
            log = self._paths(tenant, info.key)[0]
            for record in self._records(tenant, info.key, log):
                message = record_message(record, str(log))
                content = message_text(message)
                if needle in content.casefold():
                    hits.append(SearchHit(info.key, int(record.get("seq", 0)), record.get("role", message.type), content, record.get("ts", "")))
                    if len(hits) >= limit:
                        return hits
        return hits

    def close(self) -> None:
        """Nothing to release: every call opens and closes its files."""

    # -- internals -----------------------------------------------------------------------------
    @staticmethod
    def _read_meta(meta: Path) -> dict[str, Any] | None:
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

    def _replace(self, meta: Path, document: dict[str, Any], encoded: Written) -> None:
        """Rewrite the meta file (temp file, rename): a cache of the log's state, so no fsync of
        its own; a reader that finds it behind the log or torn replays the log's state lines."""
        data = meta_bytes(encoded)
        temporary = meta.with_name(meta.name + ".tmp")
        try:
            with fresh_file(temporary, binary=True) as handle:  # a link left at the temporary name is replaced, never followed
                handle.write(data)
            os.replace(temporary, meta)
        except OSError as error:
            self._written.forget(meta)
            raise StoreError(f"cannot write {meta}: {error}") from error
        self._written.put(meta, document, encoded)

    def _current(self, log: Path, meta: Path) -> dict[str, Any] | None:
        """The session's state document: the meta file, or, when it is behind the log (a crash
        between the append and its rewrite, a power loss) or damaged, the state the log's state
        lines leave. None when neither holds one."""
        state, recovered = current_state(log, meta, self._read_meta)
        if recovered:
            _recovered(recovered, 4)
        return state

    @staticmethod
    def _settle(log: Path, state: dict[str, Any] | None) -> tuple[int, int]:
        """(records, bytes) of the log now; cuts a torn last line left by a crashed writer."""
        if not log.exists():
            return 0, 0
        size = log.stat().st_size
        count, known = int((state or {}).get("message_count", 0)), int((state or {}).get("bytes", 0))
        if state is not None and size == known:  # as the last state left it: no torn line, nothing uncounted
            return count, size
        with open(log, "rb+") as handle:
            if size and (handle.seek(size - 1), handle.read(1))[1] != b"\n":
                tail = last_newline(handle, size)
                _recovered(f"{log}: dropping a torn last line left by an interrupted write.", 4)
                handle.truncate(tail)
                size = tail
            if size != known or state is None:  # lines written after the last state (or unknown): count them
                handle.seek(known if 0 < known <= size else 0)
                count = count if 0 < known <= size else 0
                for line in handle:
                    if _is_reset(line):
                        count = 0
                    elif line.strip() and not is_state_line(line):
                        count += 1
        return count, size

    def _records(self, tenant: str, key: str, log: Path, since: int = 0, *, locked: bool = False) -> list[dict[str, Any]]:
        with paused_gc():
            return self._decode(tenant, key, log, since, locked)

    def _decode(self, tenant: str, key: str, log: Path, since: int, locked: bool) -> list[dict[str, Any]]:
        try:
            raw = log.read_bytes()
        except FileNotFoundError:
            return []
        except OSError as error:
            raise StoreError(f"cannot read {log}: {error}") from error
        end = raw.rfind(b"\n") + 1
        if end < len(raw):  # b"" when the file ends with a newline
            _recovered(f"{log}: dropping a torn last line (an interrupted write).", 4)
        records: list[dict[str, Any]] = []
        bad: list[tuple[int, bytes]] = []
        for number, line in enumerate(_lines(raw, end)):  # one line alive at a time: no list of them to free after
            if not line.strip() or is_state_line(line):
                continue
            if since and b'"_type"' not in line:  # skip what the caller holds without decoding it
                seq = _SEQ.search(line)
                if seq is not None and int(seq.group(1)) < since:
                    continue
            try:
                record = _loads(line)
                if not _is_record(record):
                    raise ValueError("not a record")
            except ValueError:
                bad.append((number, line))
                continue
            if record.get("_type") == _RESET:
                records = []
            else:
                records.append(record)
        if bad:
            self._quarantine(tenant, key, log, bad, locked)
        return records

    def _window_records(self, log: Path, state: dict[str, Any]) -> list[dict[str, Any]] | None:
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
                if not _is_record(record) or record.get("_type") == _RESET:
                    return None
                records.append(record)
        if not _is_record(first) or first.get("seq") != 0 or len(records) < 2 or records[1].get("seq") != start:
            return None
        return records

    def ids(self, tenant: str, key: str, start: int, stop: int) -> list[str | None]:
        """The ids of the records ``start .. stop - 1`` without decoding their messages (one
        pattern over the bytes between the meta file's offsets; line by line if that misfits)."""
        log, meta, _ = self._paths(tenant, key)
        state = self._current(log, meta) or {}
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
            if b'"_type"' in line and _is_reset(line):
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

    def _quarantine(self, tenant: str, key: str, log: Path, bad: list[tuple[int, bytes]], locked: bool = False) -> None:
        quarantine = log.with_name(log.name.replace(".jsonl", ".quarantine.jsonl"))
        inside(self.root, quarantine.relative_to(self.root), f"quarantine of session {key!r}")
        if not self.create:  # opened for reading only: report, write nothing
            _recovered(f"{log}: {len(bad)} corrupt line(s) skipped.", 4)
            return
        with contextlib.nullcontext() if locked else self._locked(tenant, key):
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
        _recovered(
            f"{log}: {len(bad)} corrupt line(s) skipped (lines {', '.join(str(n + 1) for n, _ in bad[:5])}); "
            f"copies are in {quarantine.name}.", 4)


_META_LAG = 256 * 1024
"""How far (bytes of log) the meta file may lag behind the log before a save rewrites it; a
reader replays the state lines in between (a rewrite costs a rename, which ext4 flushes)."""
_OFFSET_STEP = 1000
"""Every 1,000th record's byte offset is kept in the meta file (``offsets``), so a load can
seek to the window instead of reading the whole log."""
_RESET_MARK = b'{"_type": "reset"'
_ID = re.compile(rb'\{"id": "([^"\\]*)"')
_IDS = re.compile(rb'\n\{"id": "([^"\\]*)"')  # a literal prefix: re finds it fast (re.M with ^ is 3x slower)


def _offsets_of(old: dict[str, Any] | None, count: int, size: int) -> list[list[int]] | None:
    """The offsets the last state recorded, if they still describe the log (None: rebuild them)."""
    if old is None:
        return [] if count == 0 else None
    offsets = old.get("offsets")
    if not isinstance(offsets, list) or int(old.get("bytes", -1)) != size or int(old.get("message_count", -1)) != count:
        return None
    if count and not offsets:
        return None
    return [list(o) for o in offsets]


def _scan_offsets(log: Path) -> list[list[int]]:
    """The offsets of a log, read once from its lines (a log from an older version)."""
    offsets: list[list[int]] = []
    count = position = 0
    try:
        with open(log, "rb") as handle:
            for line in handle:
                if _is_reset(line):
                    offsets, count = [], 0
                elif line.strip() and not is_state_line(line):
                    if count % _OFFSET_STEP == 0:
                        offsets.append([count, position])
                    count += 1
                position += len(line)
    except FileNotFoundError:
        return []
    return offsets


def _lines(raw: bytes, end: int) -> Iterator[bytes]:
    """The lines of ``raw[:end]`` one by one (``raw.split`` would hold them all at once)."""
    start = 0
    while start < end:
        stop = raw.index(b"\n", start)
        yield raw[start:stop]
        start = stop + 1


def _size(log: Path) -> int:
    """The log's size in bytes (0 when there is none yet)."""
    try:
        return os.stat(log).st_size
    except FileNotFoundError:
        return 0


def _is_record(record: Any) -> bool:
    """A message record (or the reset marker): anything else in a log is quarantined, never loaded."""
    if not isinstance(record, dict):
        return False
    if record.get("_type") == _RESET:
        return True
    message = record.get("message")
    return isinstance(message, dict) and message.get("type") in _MESSAGE_TYPES and isinstance(message.get("data"), dict)


_MESSAGE_TYPES = frozenset({"human", "ai", "system", "tool", "function", "chat", "HumanMessageChunk", "AIMessageChunk",
                            "SystemMessageChunk", "ToolMessageChunk", "FunctionMessageChunk", "ChatMessageChunk"})
"""The message types langchain-core loads; a record of any other type (a newer library's, a
hand edit) is quarantined like a damaged line instead of making the whole session unloadable."""


def _is_reset(line: bytes) -> bool:
    """Whether a log line is the reset marker ``Session.clear`` leaves."""
    if b'"_type"' not in line:  # cheap test first: message records never have one
        return False
    try:
        record = _loads(line)
    except ValueError:
        return False
    return isinstance(record, dict) and record.get("_type") == _RESET
