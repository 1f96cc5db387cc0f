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
from typing import Any

from session_graph._base.files import decode_name, encode_name
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
from session_graph.stores.jsonl_handles import Held, HeldFiles, log_status
from session_graph.stores.jsonl_log import (
    RESET,
    decode,
    log_size,
    offsets_of,
    quarantine_lines,
    quarantine_path,
    read_ids,
    read_meta,
    record_lines,
    recovered,
    scan_offsets,
    settle,
    window_records,
)
from session_graph.stores.jsonl_state import (
    Appending,
    InFlight,
    MetaCache,
    Written,
    current_state,
    dumps,
    encode,
    grown,
    meta_bytes,
    state_line,
)
from session_graph.stores.jsonl_tail import after_state, version_of
from session_graph.stores.jsonl_trace import trace_added, trace_of, unknown
from session_graph.stores.records import LineRecords
from session_graph.stores.search_index import JsonlSearch

__all__ = ["JsonlStore"]

logger = logging.getLogger(__name__)  # stores.jsonl_log reports recoveries on it too

_META_LAG = 256 * 1024
"""How far (bytes of log) the meta file may lag behind the log before a save rewrites it; a
reader replays the state lines in between (a rewrite costs a rename, which ext4 flushes)."""


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
        self._held = HeldFiles()  # each session's lock file and log, open across saves
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
        log, meta, _ = self._paths(tenant, key)
        with self._holding(tenant, key):
            yield log, meta

    def _holding(self, tenant: str, key: str) -> contextlib.AbstractContextManager[Held]:
        """The session's lock taken, and its held files (``stores.jsonl_handles``: the lock file
        and the log stay open across saves)."""
        return self._held.locked(self._paths(tenant, key)[2], key, self.root)

    def _append(self, held: Held, log: Path, data: bytes, sync: bool, inode: Any = False, size: int | None = None) -> int:
        """Append ``data`` to the log in one write (one fsync when ``sync`` and the store syncs); the
        size after it. ``inode``, ``size``: a ``stat`` under this lock's (False: read here; None: asked after)."""
        return held.append(log, data, log_status(log)[1] if inode is False else inode, self.fsync and sync, size)

    # -- protocol ------------------------------------------------------------------------------
    defers_sync = True  # update(..., sync=False) writes without an fsync (a later synced write flushes it)

    def update(self, tenant: str, key: str, fn: UpdateFn, *, since: int | None = None, sync: bool = True) -> int:
        """Run ``fn`` on the stored session under the session's file lock and write its change (see ``SessionStore.update``)."""
        log, meta, lock = self._paths(tenant, key)
        with self._held.locked(lock, key, self.root) as held:  # _holding's, the paths looked up once
            old, written, on_disk = self._written.get(meta)  # the document this store wrote last, if nobody wrote since
            mine = old is not None and int(old.get("bytes", -1)) == log_size(log)
            if not mine:
                old, written = self._current(log, meta), None
            if old is not None:
                check_schema(old, str(meta))
            # as this store left it (one stat above said so): settle would find nothing to count or cut;
            # after, markers: the lines after the state (stores.jsonl_tail.after_state's, from settle's one read)
            count, size, after, markers = (int(old.get("message_count", 0)), int(old["bytes"]), 0, 0) if mine and old else settle(log, old)
            stored = int((old or {}).get("version", 0)) + after  # each moves the version; a reset marker among them is a clear
            known = offsets_of(old, count, size)  # None: the log is not as the last state left it
            records = [] if since is None or since >= count else list(self._records(tenant, key, log, since, known, locked=True))
            seen = {**old, "resets": resets(old) + markers} if markers else old  # a marker after the state: a clear, as read() shows
            change = check_change(fn(StoredSession(key, seen, stored, count, records)), fn)
            if change is None:
                return stored
            state = change.state
            offsets = known if not change.reset else []
            if offsets is None:  # written by an older version, or lines came after the last state: index the log once
                offsets = scan_offsets(log)
            lines: list[bytes] = []
            position = start = size
            if change.reset:
                lines.append((json.dumps({"_type": RESET, "ts": state.get("updated_at")}) + "\n").encode())
                position += len(lines[-1])
                count = 0
            count, position = record_lines(change.records, count, position, offsets, lines)
            version = stored + 1
            document = {**state, "key": key, "tenant": tenant, "message_count": count, "version": version,
                        "resets": resets(old) + markers + change.reset}
            if old is not None:
                document["created_at"] = old.get("created_at", document.get("created_at"))
            document["state_lines"] = 1  # the log holds this document's state lines (meta file only)
            encoded = encode(document, written)
            base = written if mine else (encode(old, None) if old is not None and old.get("state_lines") == 1 else None)
            # the trace: the rows it gained go in the state line ("trace+"), as an appended save's do;
            # a trace not only grown at its end (merged, cleared) has the meta file rewritten
            trace, before = trace_of(document), trace_of(old)
            traced = trace is not before and (unknown(before) or trace != before)  # unknown: told before a dump
            added = trace_added(before, trace) if traced and base is not None and not change.reset else None
            lines.append(state_line(encoded, base, trace=added))  # what changed since the state the log ends with, else all of it
            position += len(lines[-1])
            size = self._append(held, log, b"".join(lines), sync)  # the records and the state they make: one write, one fsync
            self.search_index.appended(log, key, start, lines, tenant=tenant)
            document["offsets"], document["bytes"] = (offsets if size == position else []), size
            encoded.fields["offsets"], encoded.fields["bytes"] = dumps(document["offsets"]), dumps(size)
            if mine and not change.reset and (not traced or added is not None) and size - on_disk < _META_LAG:
                self._written.put(meta, document, encoded, on_disk)
            else:
                self._replace(meta, document, encoded)
            return version

    def append_messages(self, tenant: str, key: str, records: list[dict[str, Any]], expect: Appending, *,
                        sync: bool = True) -> int | None:
        """Append ``records`` and the state line they make (the window loses its first
        ``expect.dropped`` ids and grows by theirs; the count, the version and ``expect.fields``
        change) in one write and one fsync, at the cost
        of the records: the state document is neither built nor encoded again. Returns the new
        version; None, writing nothing, unless the log ends with the state this store wrote
        last and it is the one ``expect`` describes (the caller then saves in full, merging
        what another writer stored)."""
        log, meta, lock = self._paths(tenant, key)
        with self._held.locked(lock, key, self.root) as held:  # _holding's, the paths looked up once
            size, inode = log_status(log)
            old, written, on_disk = self._written.get(meta)  # its stat too: a meta-only rewrite (a newer version, a hand edit) leaves the log as it was
            if old is None or written is None or int(old.get("bytes", -1)) != size or not expect.matches(old):
                return None
            start = size = int(old["bytes"])
            offsets = offsets_of(old, expect.persisted, size)
            if offsets is None:
                return None
            lines: list[bytes] = []
            count, position = record_lines(records, expect.persisted, size, offsets, lines) if records else (expect.persisted, size)
            version = expect.version + 1
            changed, ids = {**expect.fields, "message_count": count, "version": version}, [record.get("id") for record in records]
            # a prune's new trace records go in the state line (the meta file is not rewritten for them)
            added = trace_added(old.get("trace"), expect.fields["trace"]) if "trace" in expect.fields else None
            document, encoded, line = grown(old, written, changed, ids, expect.dropped, added)  # and its state line: only what changed
            lines.append(line)
            position += len(lines[-1])
            size = self._append(held, log, b"".join(lines), sync, inode, size)  # as update: one write, one fsync
            self.search_index.appended(log, key, start, lines, tenant=tenant)
            document["offsets"], document["bytes"] = (offsets if size == position else []), size
            if len(document["offsets"]) != len(old["offsets"]) or "offsets" not in encoded.fields:  # grown (one per 1,000 records): offsets_of's copy, appended to
                encoded.fields["offsets"] = dumps(document["offsets"])
            encoded.fields["bytes"] = b"%d" % size  # dumps(size), without its frame
            if size - on_disk < _META_LAG and ("trace" not in expect.fields or added is not None):  # else the trace: written now
                self._written.put(meta, document, encoded, on_disk, detached=True)
            else:
                self._replace(meta, document, encoded)
            return version

    reads_windows = True  # read(window=True) seeks to the window through the offsets in the meta file

    def read(self, tenant: str, key: str, *, since: int = 0, window: bool = False) -> Snapshot | None:
        """The stored session, or None; ``since``: records from that ``seq`` on; ``window``: record 0 and the records from the window on."""
        try:
            return self._read(tenant, key, since, window, settled=not self.create)
        except InFlight:  # read again once the save holding the lock is done: what is missing then is missing
            with self._holding(tenant, key):
                return self._read(tenant, key, since, window, settled=True)

    def _read(self, tenant: str, key: str, since: int, window: bool, settled: bool) -> Snapshot | None:
        log, meta, _ = self._paths(tenant, key)
        state = self._current(log, meta, settled)
        if state is not None:
            check_schema(state, str(meta))
        if window and state is not None:
            seen = window_records(log, state)  # record 0 and the window, seeking through the offsets
            if seen is not None:
                return Snapshot(key, state, seen, int(state.get("version", 0)))
        trusted = state.get("offsets") if state is not None and int(state.get("bytes", -1)) == log_size(log) else None
        after, _, markers = after_state(log, state)
        after = after if self.create else 0  # read-only, lock-free: no version a save in flight gets (jsonl_tail)
        if after and not settled:  # lines after the state: counted in under the lock
            raise InFlight  # (a save in flight holds it: its records are no lines after a state once its state line is in)
        records = self._records(tenant, key, log, since, trusted, locked=settled and self.create, settled=settled)
        if state is None and not records:
            return None
        if state is None:
            if not settled:  # no state read, then a log: a first save landed in between
                raise InFlight
            recovered(f"{meta} is missing; loading the {len(records)} messages of {log} without it.", 4)
            state = {"message_count": len(records)}
        full = {**state, "window_start": 0} if state.get("window_start") else state  # never a window read (codec._gap)
        full = {**full, "resets": resets(state) + markers, "message_count": 0} if markers else full  # a marker after the state: a clear (all after it late)
        return Snapshot(key, full, records, int(state.get("version", 0)) + after)  # (a line removed by hand at the window's start)

    def version(self, tenant: str, key: str) -> int | None:
        """The stored version (the meta file's, plus the log's lines after it in a writable store: ``stores.jsonl_tail``), or None if not stored."""
        log, meta, _ = self._paths(tenant, key)
        return version_of(log, self._written.get(meta)[0], lambda settled: self._current(log, meta, settled),
                          lambda: self._holding(tenant, key), self.create)

    def delete(self, tenant: str, key: str) -> bool:
        """Remove a session's log and meta files; False if there was none."""
        log, meta, _ = self._paths(tenant, key)
        if not log.exists() and not meta.exists():
            return False  # nothing to delete: take no lock, create nothing
        with self._holding(tenant, key) as held:
            held.close_log()  # not removed while open here (Windows refuses to)
            found = False
            quarantine = quarantine_path(self.root, log, key)
            self._written.forget(meta)
            for path in (log, meta, quarantine):
                if path.exists():
                    path.unlink()
                    found = True
            self.search_index.deleted(log)
            self._held.forget(self._paths(tenant, key)[2])  # closed once this lock is released
            return found

    def list(self, tenant: str) -> list[SessionInfo]:
        """Every session of a tenant, newest ``updated_at`` first."""
        folder = self._dir(tenant)
        infos = []
        if folder.is_dir():
            inside(self.root, folder.relative_to(self.root), f"folder of tenant {tenant!r}")
        for meta in folder.glob("*.meta.json") if folder.is_dir() else []:
            if meta.is_symlink():
                recovered(f"{meta} is a symbolic link; the store never follows links, so it is not listed.", 3)
                continue
            state = self._current(log := meta.with_name(meta.name[: -len(".meta.json")] + ".jsonl"), meta)
            if state is None:
                continue
            key = state.get("key") or decode_name(meta.name[: -len(".meta.json")]) or meta.name
            infos.append(SessionInfo(key, state.get("created_at", ""), state.get("updated_at", ""),
                                     after_state(log, state)[1], dict(state.get("metadata") or {})))
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
        """Write the search index's terms files up to their logs and close the files held open
        across saves (a later call opens them again). Meta files behind their logs are left: the
        log's state lines hold all they would add (an appended prune's trace records too, as ``"trace+"``)."""
        self.search_index.flush()
        self._held.close()

    # -- internals (the log format and its reading: stores.jsonl_log) --------------------------
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

    def _current(self, log: Path, meta: Path, settled: bool = True) -> dict[str, Any] | None:
        """The session's state: the meta file, or the state the log's state lines leave when it is behind the log
        (a crash between the append and its rewrite) or damaged; None when neither holds one. ``settled=False``
        (no lock held): ``InFlight`` instead of a recovery, as a first save writes its log before its meta file."""
        state, note = current_state(log, meta, read_meta)
        if note and not settled:
            raise InFlight
        if note:
            recovered(note, 4)
        return state

    def _records(self, tenant: str, key: str, log: Path, since: int = 0, offsets: list[list[int]] | None = None, *,
                 locked: bool = False, settled: bool = True) -> LineRecords:
        """The records from ``since`` on, decoded when read; ``offsets`` (trusted) let the read seek to ``since``."""
        with paused_gc():
            return self._decode(tenant, key, log, since, offsets, locked, settled)

    def _decode(self, tenant: str, key: str, log: Path, since: int, offsets: list[list[int]] | None,
                locked: bool, settled: bool) -> LineRecords:
        records, bad = decode(log, since, offsets, settled=settled)
        if bad:
            self._quarantine(tenant, key, log, bad, locked)
        return records

    def ids(self, tenant: str, key: str, start: int, stop: int) -> list[str | None]:
        """The ids of the records ``start .. stop - 1`` without decoding their messages (one
        pattern over the bytes between the meta file's offsets; line by line if that misfits)."""
        log, meta, _ = self._paths(tenant, key)
        return read_ids(log, self._current(log, meta) or {}, start, stop)

    def _quarantine(self, tenant: str, key: str, log: Path, bad: list[tuple[int, bytes]], locked: bool = False) -> None:
        lock = contextlib.nullcontext() if locked else self._locked(tenant, key)
        quarantine_lines(self.root, key, log, bad, write=self.create, lock=lock)

