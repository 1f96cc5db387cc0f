"""The JSONL store's search index: one ``<name>.terms`` file next to each ``<name>.jsonl`` log.

Writing: ``JsonlStore.update`` hands each append to ``JsonlSearch.appended`` under the
session's lock, which notes it; the terms lines (one per log line: its seq, byte offset and
length in the log, id, role, ts and retrieval terms; a reset marker gets a reset line) are
written off the save path, by the next search (below) or at ``flush`` (``JsonlStore.close``),
from the byte the terms file covers (``search_writes.TermsWriter``; ``batch_bytes`` makes saves
write them once the log is that far ahead); no fsync (the index can always be derived from the
log again).

Reading: a search keeps one in-memory BM25 index per tenant (``retrieval.bm25``) and, per
query, brings each session up to date from the end of its terms file. The tenant folder's
mtime is the change marker (a save bumps it, but not again within ``RACY / 4`` of its last bump: see ``search_marker``), so a query on an
unchanged tenant costs one stat, not a listing and a stat per session. Every terms line carries a CRC-32 and the offsets must tile the log without
gaps, so a damaged, foreign or stale file is never trusted: it is rebuilt from the log, under
the session's lock, and reported. A terms file behind its log (a batch not written
yet, a process that ended without ``close``, a log written by an older version) is caught up
from the log's tail, under the session's lock.

Hits read their text back from the log (one seek each); nothing else reads the log, so a
search never pages a session's middle into memory.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
from pathlib import Path
import threading
import time
from typing import Any, Protocol

from session_graph._base.files import decode_name
from session_graph._base.forks import renew_after_fork
from session_graph.retrieval.hits import SearchHit
from session_graph.retrieval.tokenize import TOKENIZER
from session_graph.stores import search_marker
from session_graph.stores.search_state import LogState as _Session
from session_graph.stores.search_state import TenantState as _Tenant
from session_graph.stores.search_state import documents_since
from session_graph.stores.search_terms import (
    HEADER,
    header_line,
    key_of_log,
    parse_line,
    record_text,
    scan_log,
    terms_path,
)
from session_graph.stores.search_writes import TermsWriter, unlink_index


class IndexedStore(Protocol):
    """What the index reads of its ``JsonlStore`` (typed here, since the store imports this module)."""

    create: bool

    def _dir(self, tenant: str) -> Path: ...

    def _locked(self, tenant: str, key: str) -> contextlib.AbstractContextManager[Any]: ...

try:
    from orjson import loads as _loads
except ImportError:  # pragma: no cover
    _loads = json.loads

__all__ = ["JsonlSearch", "record_text", "terms_path"]

log = logging.getLogger(__name__)
_FRESH = 0.005  # seconds a check of the files stays good for (a search's second pass reuses it)
Ref = tuple[str, int]


class _Damaged(Exception):
    """A terms file that cannot be trusted (rebuild it)."""


class JsonlSearch:
    """The search index of one ``JsonlStore`` (see the module docstring)."""

    def __init__(self, store: IndexedStore) -> None:
        self.store = store
        self._tenants: dict[str, _Tenant] = {}
        self._lock = threading.RLock()
        renew_after_fork(self)  # a forked child gets a new lock (a parent thread holding it is not there)
        self._appends = 0  # saves through this store (a search after one always checks the files)
        self._bumped: dict[Path, float] = {}  # when a save last moved each tenant folder's change marker
        self._folders: dict[Path, Path] = {}  # each log's tenant folder
        self.writer = TermsWriter(store)

    def _after_fork(self) -> None:
        self._lock = threading.RLock()

    # -- writing (under the session's lock) -------------------------------------------------------
    def appended(self, log_path: Path, key: str, start: int, lines: list[bytes], *, tenant: str | None = None) -> None:
        """Note lines just appended to ``log_path`` at byte ``start`` (called by ``update``): the
        terms file is written in batches (``search_writes.TermsWriter``); any search catches a terms
        file behind its log up first. Never fails the save."""
        self._appends += 1
        folder = self._folders.get(log_path)
        if folder is None:  # one Path per log (a new ``parent`` is hashed anew on every look-up)
            self._folders = self._folders if len(self._folders) < 4096 else {}
            folder = self._folders[log_path] = log_path.parent
        search_marker.bump(folder, self._bumped)
        self.writer.appended(log_path, key, start, lines, tenant)

    def flush(self) -> None:
        """Write every terms file this store left behind its log (``JsonlStore.close`` calls it)."""
        self.writer.flush()

    @property
    def batch_bytes(self) -> int | None:
        """How far a save lets a terms file fall behind its log (None, the default: saves never
        index, searches and ``close`` do; 0: every save indexes)."""
        return self.writer.batch_bytes

    @batch_bytes.setter
    def batch_bytes(self, value: int | None) -> None:
        self.writer.batch_bytes = value

    def deleted(self, log_path: Path) -> None:
        """Drop the terms file of a deleted session and what this process indexed of it (called
        under its lock): a log written again at that name may get the same inode and size, so the
        next search could not tell it from the old one."""
        self._appends += 1  # the next search checks the files again
        search_marker.bump(log_path.parent)
        self.writer.forget(log_path)
        unlink_index(terms_path(log_path))
        with self._lock:
            for tenant, state in self._tenants.items():
                if log_path.name in state.sessions and self.store._dir(tenant) == log_path.parent:
                    self._drop(state, log_path.name)

    # -- reading ----------------------------------------------------------------------------------
    def rank(self, tenant: str, words: list[str], limit: int, *, keys: list[str] | None = None,
             since: str | None = None, until: str | None = None) -> list[tuple[Ref, float]]:
        """The best ``limit`` (``(key, seq)``, BM25 score) of a tenant's messages (of ``keys``, in
        the time range ``since <= ts < until`` when given), best first."""
        with self._lock:
            state = self._sync(tenant)
            allow = None
            if since is not None or until is not None:
                allow = state.index.mask((since is None or ts >= since) and (until is None or ts < until) for ts in state.times)
            return state.index.search(words, limit, owners=keys, allow=allow)  # type: ignore[return-value]

    def fetch(self, tenant: str, refs: list[Ref], score: dict[Ref, float], around: int = 0) -> list[SearchHit]:
        """The hits for ``refs`` (text read back from the logs), each with up to ``around``
        messages either side as ``neighbours``."""
        with self._lock:
            state = self._tenants.get(tenant) or self._sync(tenant)
            wanted = {ref: state.where[ref] for key, seq in refs for ref in ((key, s) for s in range(seq - around, seq + around + 1))
                      if ref in state.where}
        folder = self.store._dir(tenant)
        plain: dict[Ref, SearchHit] = {}
        by_log: dict[str, list[Ref]] = {}
        for ref in sorted(wanted):
            by_log.setdefault(wanted[ref][0], []).append(ref)
        for name, group in by_log.items():
            try:
                handle = open(folder / name, "rb")  # noqa: SIM115 - one open per log, closed below
            except OSError:
                continue  # deleted under us: leave its hits out
            with handle:
                for ref in group:
                    _, offset, size, message_id, role, ts = wanted[ref]
                    try:
                        handle.seek(offset)
                        record = _loads(handle.read(size))
                    except (OSError, ValueError):
                        continue  # changed under us (a reset): leave it out
                    if isinstance(record, dict) and record.get("seq") == ref[1]:
                        plain[ref] = SearchHit(ref[0], ref[1], role, record_text(record), ts, message_id, score.get(ref, 0.0))
        hits = []
        for ref in refs:
            hit = plain.get(ref)
            if hit is None:
                continue
            if around:
                near = tuple(plain[(ref[0], s)] for s in range(ref[1] - around, ref[1] + around + 1)
                             if s != ref[1] and (ref[0], s) in plain)
                hit = SearchHit(hit.key, hit.seq, hit.role, hit.text, hit.ts, hit.message_id, hit.score, near)
            hits.append(hit)
        return hits

    def documents(self, tenant: str, keys: list[str] | None = None) -> list[tuple[Ref, str | None, str]]:
        """``((key, seq), message id, ts)`` of every indexed message of a tenant (for a dense index)."""
        with self._lock:
            state = self._sync(tenant)
            wanted = None if keys is None else set(keys)
            return [(ref, w[3], w[5]) for ref, w in state.where.items() if wanted is None or ref[0] in wanted]

    def documents_since(self, tenant: str, mark: Any = None) -> tuple[Any, list[tuple[Ref, str | None, str]] | None]:
        """What a dense index kept up to date needs: see ``search_state.documents_since``."""
        with self._lock:
            return documents_since(self._sync(tenant), mark)

    def count(self, tenant: str) -> int:
        """How many messages of a tenant the index holds (after bringing it up to date)."""
        with self._lock:
            return len(self._sync(tenant).index)

    def stats(self, tenant: str) -> dict[str, Any]:
        """The statistics that define a tenant's scores (a test compares them with a rebuilt index's)."""
        with self._lock:
            return self._sync(tenant).index.stats()

    def forget(self, tenant: str | None = None) -> None:
        """Drop the in-memory index (of one tenant, or all); the next search reloads the terms files."""
        with self._lock:
            if tenant is None:
                self._tenants.clear()
            else:
                self._tenants.pop(tenant, None)

    # -- keeping the in-memory index up to date ---------------------------------------------------
    def _sync(self, tenant: str) -> _Tenant:
        state = self._tenants.setdefault(tenant, _Tenant())
        now = time.monotonic()
        if now - state.synced < _FRESH and state.appends == self._appends:
            return state  # checked a moment ago (a search's second pass) and nothing was saved here since
        folder = self.store._dir(tenant)
        marker = search_marker.marker(folder)
        if (marker is not None and marker == state.marker and state.appends == self._appends
                and now - state.scanned < search_marker.RESCAN):
            state.synced = now
            return state  # no session of the tenant changed since the last scan: no listing, no stat per session
        state.synced, state.appends = now, self._appends
        state.marker, state.scanned = search_marker.trusted(marker), now
        logs: dict[str, tuple[int, int]] = {}
        try:
            with os.scandir(folder) as entries:
                for entry in entries:
                    name = entry.name
                    if name.endswith(".jsonl") and not name.endswith(".quarantine.jsonl") and not name.startswith("."):
                        logs[name] = (entry.stat().st_size, entry.inode())
        except FileNotFoundError:
            pass
        for name in [n for n in state.sessions if n not in logs]:
            self._drop(state, name)
        for name, (size, inode) in logs.items():
            session = state.sessions.get(name)
            if session is not None and session.end == size and session.log_inode == inode:
                continue  # (a terms file another process rebuilt since says the same: it is derived from this log)
            if session is not None and session.log_inode not in (0, inode):
                self._drop(state, name)  # deleted and written again by another process
            try:
                self._catch_up(tenant, state, folder, name, size)
            except _Damaged as damage:
                self._rebuild(tenant, state, folder, name, str(damage))
            if name in state.sessions:
                state.sessions[name].log_inode = inode
        return state

    def _catch_up(self, tenant: str, state: _Tenant, folder: Path, name: str, size: int) -> None:
        """Apply the new lines of a terms file; a terms file behind its log is completed under the lock."""
        path = terms_path(folder / name)
        session = state.sessions.get(name)
        try:
            stat = path.stat()
        except FileNotFoundError:
            raise _Damaged("missing") from None
        if session is not None and (stat.st_dev, stat.st_ino) != session.identity:
            self._drop(state, name)  # replaced (rebuilt by another process): read it again
            session = None
        if session is None:
            session = _Session(key="", identity=(stat.st_dev, stat.st_ino))
        with open(path, "rb") as handle:
            handle.seek(session.consumed)
            chunk = handle.read()
        usable = chunk[: chunk.rfind(b"\n") + 1]  # a line still being written is left for later
        self._apply(state, name, session, usable)
        state.sessions[name] = session
        if session.end > size:
            raise _Damaged("longer than its log")
        if session.end < size:
            self._complete(tenant, state, folder, name)

    def _apply(self, state: _Tenant, name: str, session: _Session, chunk: bytes) -> None:
        start = 0
        for raw in chunk.splitlines(keepends=True):
            document = parse_line(raw)
            if document is None:
                raise _Damaged(f"a damaged line at byte {session.consumed + start}")
            start += len(raw)
            if "h" in document:
                if session.consumed + start != len(raw) or document.get("tokenizer") != TOKENIZER or document.get("h") != HEADER:
                    raise _Damaged("made by another version" if session.consumed == 0 else "a header in the middle")
                session.key = str(document.get("key") or decode_name(name[: -len(".jsonl")]) or "")
                continue
            if not session.key:
                raise _Damaged("no header")
            offset, size = document.get("o"), document.get("n")
            if offset != session.end or not isinstance(size, int) or size <= 0:
                raise _Damaged(f"a gap at log byte {session.end}")
            session.end += size
            if "reset" in document:
                state.index.remove_owner(session.key)
                for ref in [r for r in state.where if r[0] == session.key]:
                    del state.where[ref]
                session.seq = 0
                continue
            if "skip" in document:
                continue
            seq = document.get("s")
            if seq != session.seq:
                raise _Damaged(f"seq {seq} where {session.seq} was expected")
            session.seq += 1
            ref = (session.key, seq)
            state.index.add(ref, str(document.get("t", "")).split(), owner=session.key)
            state.times.append(str(document.get("ts", "")))  # by document id: every add takes the next id
            state.where[ref] = (name, offset, size, document.get("id"), str(document.get("r", "")), str(document.get("ts", "")))
        session.consumed += start

    def _complete(self, tenant: str, state: _Tenant, folder: Path, name: str) -> None:
        """Index the log lines past the terms file's end, under the session's lock."""
        session = state.sessions[name]
        with self._writing(tenant, session.key or key_of_log(folder, name)):
            path = terms_path(folder / name)
            with open(path, "rb") as handle:  # another writer may have caught up meanwhile
                handle.seek(session.consumed)
                chunk = handle.read()
            self._apply(state, name, session, chunk[: chunk.rfind(b"\n") + 1])
            out = list(scan_log(folder / name, session.end, session.seq))
            if out:
                if self.store.create:
                    try:
                        with open(path, "r+b") as handle:  # past a torn last line (a crash mid-append), if any
                            handle.truncate(session.consumed)
                            handle.seek(session.consumed)
                            handle.write(b"".join(out))
                    except OSError as error:
                        log.warning("could not extend the search index %s (%s); searching from memory", path, error)
                self._apply(state, name, session, b"".join(out))
            log.info("search index of %s caught up with %d log line(s)", folder / name, len(out))

    def _rebuild(self, tenant: str, state: _Tenant, folder: Path, name: str, why: str) -> None:
        """Write a session's terms file again from its log (atomically), under its lock, and load it."""
        self._drop(state, name)
        session = _Session(key="")
        key = key_of_log(folder, name)
        with self._writing(tenant, key):
            log_path = folder / name
            if not log_path.exists():
                return
            path = terms_path(log_path)
            if why != "missing":
                log.warning("the search index %s is %s; rebuilding it from %s", path, why, log_path)
            lines = [header_line(key), *scan_log(log_path, 0, 0)]
            if self.store.create:  # a store opened for reading only indexes in memory and writes nothing
                temporary = path.with_name(path.name + ".tmp")
                try:
                    with open(temporary, "wb") as handle:
                        handle.write(b"".join(lines))
                    os.replace(temporary, path)
                    stat = path.stat()
                    session.identity = (stat.st_dev, stat.st_ino)
                except OSError as error:
                    log.warning("could not write the search index %s (%s); searching from memory", path, error)
            self._apply(state, name, session, b"".join(lines))
            state.sessions[name] = session

    def _writing(self, tenant: str, key: str) -> Any:
        """The session's lock, when this store may write (a read-only one takes none: it writes nothing)."""
        return self.store._locked(tenant, key) if self.store.create else contextlib.nullcontext()

    def _drop(self, state: _Tenant, name: str) -> None:
        session = state.sessions.pop(name, None)
        if session is not None and session.key:
            state.index.remove_owner(session.key)
            for ref in [r for r in state.where if r[0] == session.key]:
                del state.where[ref]
