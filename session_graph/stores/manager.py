"""SessionManager: sessions by key over a store, with a bounded cache.

``get_or_create(key)`` returns the live Session for a key (the same object while it stays
in the cache) and notices when another process changed the store: the cached session is
reloaded in place and, if it has changes of its own, merged with what the other writer
stored (``stores.merge``), so nothing is lost. ``save(session)`` is one store ``update``:
under the store's writer lock it appends only the messages the store does not have and
replaces the small state document, or, if another writer got in since we read, merges
what they stored with our changes and writes that, in the same locked step (never a
retry). Two writers on one key thus keep both windows, both counters and what each memo
really folded. The cache is LRU; an entry with unsaved changes is never evicted. Imports and
exports of other systems' files (nanobot, OpenViking) are ``stores.interop``'s.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
import contextlib
from dataclasses import dataclass
import logging
import os
import time
from typing import Any

from langchain_core.messages import BaseMessage

from session_graph._base.gc import paused_gc
from session_graph._base.progress import Progress, check_progress
from session_graph.errors import (
    ConfigurationError,
    StoreConflictError,
    StoreError,
)
from session_graph.memory.apply import owner_lock
from session_graph.memory.config import MemoryConfig
from session_graph.resize.history import is_loaded, prefix
from session_graph.resize.trace import ResizeTrace, saved_trace
from session_graph.retrieval.messages import bind_store
from session_graph.session import Session
from session_graph.stores.base import (
    SearchHit,
    SessionInfo,
    SessionStore,
    Snapshot,
    StoreChange,
    StoredSession,
    check_key,
    resets,
    utc_now,
)
from session_graph.stores.codec import (
    Middle,
    message_record,
    message_text,
    record_message,
    session_state,
    snapshot_state,
    state_document,
)
from session_graph.stores.dsn import parse_target
from session_graph.stores.flows import Blocking, Call, Operation, adrive, drive
from session_graph.stores.formats import SessionStats, export_snapshot, snapshot_stats
from session_graph.stores.interop import FOREIGN_FORMATS, SessionInterop
from session_graph.stores.jsonl import JsonlStore
from session_graph.stores.lease import CommitLease
from session_graph.stores.merge import Merged, adopt, base_document, merge_snapshot
from session_graph.stores.postgres import PostgresStore
from session_graph.stores.sql import SqliteStore

__all__ = ["SessionManager", "open_store"]


class _NeedsHistory(StoreConflictError):
    """A save must merge, and the session's history still has its middle in the store (a
    conflict, so the drivers hand it back to the save, which pages the middle in and retries)."""

log = logging.getLogger(__name__)
_MAX_MERGES = 50


def open_store(target: SessionStore | str | os.PathLike[str] | None = None, *, create: bool = True) -> SessionStore:
    """A store from a path or DSN (see ``stores.dsn``): any Postgres DSN form, ``sqlite:///file.db``
    or a ``.db`` path, or a directory (JSONL). None gives the JSONL store in ``./.session_graph/``.

    ``create=False`` opens for reading only: nothing (directory, file, table) is created, and a
    store that does not exist is a ``StoreError`` (Postgres without the tables reads as empty).
    """
    if target is None:
        target = ".session_graph"
    if isinstance(target, SessionStore):
        return target
    if not isinstance(target, str | os.PathLike):
        missing = [m for m in ("update", "write", "read", "version", "delete", "list", "search", "close")
                   if not callable(getattr(target, m, None))]
        raise ConfigurationError(
            f"{target!r:.80} is neither a path or DSN nor a SessionStore (it lacks {', '.join(missing)}); "
            "derive your store from session_graph.StoreBase and implement update, read, version, delete, list, "
            "search and close."
        )
    parsed = parse_target(os.fspath(target))
    if parsed.kind == "postgres":
        return PostgresStore(parsed.value, create=create)
    if parsed.kind == "sqlite":
        return SqliteStore(parsed.value, create=create)
    return JsonlStore(parsed.value, create=create)


@dataclass
class _Entry:
    session: Session
    version: int  # the store's version when we last read or wrote it (0: not stored yet)
    persisted: int  # messages of session.full_chat_history the store holds
    revision: int  # session.revision at that time
    created_at: str
    base: dict[str, Any]  # the state document we last read or wrote (what a merge starts from)


class SessionManager(SessionInterop):
    """Sessions by key (``channel:chat_id``, any string up to 256 characters) over a store.

    Args:
        store: a ``SessionStore``, a directory (JSONL), a ``.db`` file or ``sqlite://`` URL, or a
            ``postgresql://`` DSN. Default: the JSONL store in ``./.session_graph/``.
        tenant: the tenant this manager sees; others' sessions are invisible to it.
        cache_size: how many sessions the LRU cache keeps.
        session_factory: builds a new Session for a key (to give it a model, handlers,
            settings); default ``Session(id=key)``.
        create: False opens the store for reading only (nothing is created; see ``open_store``).
        memory: long-term memory for ``commit()``; the default factory gives it to every session.
    """

    def __init__(
        self,
        store: SessionStore | str | os.PathLike[str] | None = None,
        *,
        tenant: str = "default",
        cache_size: int = 128,
        session_factory: Callable[[str], Session] | None = None,
        create: bool = True,
        memory: MemoryConfig | None = None,
    ) -> None:
        if isinstance(cache_size, bool) or not isinstance(cache_size, int) or cache_size < 1:
            raise ConfigurationError(f"cache_size must be a whole number >= 1, got {cache_size!r}.")
        self.store = open_store(store, create=create)
        self.tenant = check_key(tenant, "tenant")
        self.cache_size = cache_size
        if memory is not None and not isinstance(memory, MemoryConfig):
            raise ConfigurationError(f"memory must be a MemoryConfig, got {type(memory).__name__}.")
        self.memory = memory
        self._own_factory = session_factory
        self.session_factory = session_factory or (lambda key: Session(key, memory=memory))
        self._cache: OrderedDict[str, _Entry] = OrderedDict()
        self.merges = 0  # saves or loads that merged another writer's changes (for measurement)

    def for_tenant(self, tenant: str) -> SessionManager:
        """A manager over the same store that sees only ``tenant``'s sessions; its long-term memory
        is ``tenant``'s (``memory.for_user(tenant)``), never this manager's user's."""
        memory = self.memory.for_user(tenant) if self.memory is not None else None
        return SessionManager(self.store, tenant=tenant, cache_size=self.cache_size, session_factory=self._own_factory,
                              memory=memory)

    # -- sessions ----------------------------------------------------------------------------
    # Each operation is written once, as a generator of store calls (``_Call``) and blocking
    # work (``_Blocking``), driven by ``_run`` (sync) and ``_arun`` (async: store calls through
    # their async twins, blocking work in a worker thread, so an event loop never waits on disk).
    def get(self, key: str, *, progress: Progress | None = None) -> Session | None:
        """The session for ``key``, or None if the store has none (and none is cached).

        ``progress``: told ``(messages decoded, messages)`` while a stored session loads.
        """
        return self._run(self._get_flow(key, check_progress(progress)))

    async def aget(self, key: str, *, progress: Progress | None = None) -> Session | None:
        """Async twin of :meth:`get`."""
        return await self._arun(self._get_flow(key, check_progress(progress)))

    def get_or_create(self, key: str, *, progress: Progress | None = None) -> Session:
        """The session for ``key``: cached, loaded (``progress`` as in :meth:`get`), or new (not stored until ``save``)."""
        return self._run(self._get_or_create_flow(key, check_progress(progress)))

    async def aget_or_create(self, key: str, *, progress: Progress | None = None) -> Session:
        """Async twin of :meth:`get_or_create`."""
        return await self._arun(self._get_or_create_flow(key, check_progress(progress)))

    def save(self, session: Session) -> None:
        """Persist a session: append its new messages, replace its state. O(new messages).

        A session with no change since its last save is not written again. Edits the
        session cannot see (``session.metadata[...] = ...`` alone) are saved with the next
        change, or at once after ``session.touch()``.
        """
        self._run(self._save_flow(session))

    async def asave(self, session: Session) -> None:
        """Async twin of :meth:`save`."""
        await self._arun(self._save_flow(session))

    def unsaved(self, session: Session) -> int:
        """How many messages of ``session`` the store does not hold yet (all of them if it is not managed here)."""
        entry = self._cache.get(session.id)
        if entry is None or entry.session is not session:
            return len(session.full_chat_history)
        return len(session.full_chat_history) - entry.persisted

    def _get_flow(self, key: str, progress: Progress | None = None) -> Operation:
        key = check_key(key)
        entry = self._cache.get(key)
        version = yield Call("version", (self.tenant, key))
        if entry is not None and version == (entry.version or None):
            self._cache.move_to_end(key)
            return entry.session
        if version is None:
            return entry.session if entry is not None else None
        return (yield from self._load_flow(key, entry, progress))

    def _get_or_create_flow(self, key: str, progress: Progress | None = None) -> Operation:
        session = yield from self._get_flow(key, progress)
        if session is not None:
            return session
        made = self._cache.get(key)  # another task made it while this one waited on the store: share it
        if made is not None:
            return made.session
        session = self.session_factory(key)
        if session.id != key:
            raise ConfigurationError(f"session_factory({key!r}) made a session with id {session.id!r}; use Session(key).")
        self._remember(key, _Entry(session, 0, 0, -1, utc_now(), {}))
        return session

    def _save_flow(self, session: Session) -> Operation:
        """Append the new messages and replace the state in one ``update``: under the store's
        lock, as is if nobody wrote since we read, else merged with what they wrote."""
        key = check_key(session.id)
        entry = self._cache.get(key)
        if entry is None or entry.session is not session:
            if (yield Call("version", (self.tenant, key))) is not None:
                raise StoreError(
                    f"session {key!r} is already stored; get it with manager.get_or_create({key!r}) "
                    "and save that object, so nothing stored is overwritten."
                )
            entry = _Entry(session, 0, 0, -1, utc_now(), {})
        if entry.version and entry.revision == session.revision and not session.cleared:
            return  # nothing changed since the last save (metadata edits: bump session.revision)
        for _ in range(_MAX_MERGES):
            history = session.full_chat_history
            count = len(history)
            reset = session.cleared
            new = list(history) if reset else history[entry.persisted :]  # a lazy history's middle stays in the store
            now = utc_now()
            records = [message_record(message, session.arrived_at.get(message.id or "", now)) for message in new]
            state = session_state(session, entry.created_at, now)
            revision = session.revision
            held = prefix(history, entry.persisted)  # read only if another writer's changes must be merged
            merged: list[Merged] = []
            seen: list[StoredSession] = []
            change = self._saving(entry, StoreChange(state, records, reset), held, now, merged, seen)
            try:
                version = yield Call("update", (self.tenant, key, change), {"since": len(held)})
            except _NeedsHistory:  # a merge reads the whole history: page it in outside the store's lock, then retry
                yield Blocking(history.load)  # type: ignore[union-attr]
                continue
            except StoreConflictError:
                yield from self._merge_flow(key, entry)  # deleted or cleared meanwhile: merge after a full read
                continue
            session.cleared = False
            if merged:  # the store merged another writer's changes in while it held its lock
                adopt(session, merged[-1], late=session.full_chat_history[count:])
                session.trace.merge(saved_trace(seen[-1].state or {}, f"session {key!r}"))  # its resizes too
                entry.version, entry.persisted = version, len(merged[-1].state.full_chat_history)
                entry.base = base_document(merged[-1].state, {**state, "metadata": merged[-1].metadata,
                                                               "resets": resets(seen[-1].state)})
                entry.revision = session.revision if len(session.full_chat_history) == entry.persisted else -1
            else:
                entry.version = version
                entry.base = {**state, "message_count": entry.persisted + len(new), "resets": resets(seen[-1].state) + reset}
                entry.persisted, entry.revision = (entry.persisted if not reset else 0) + len(new), revision
            self._remember(key, entry)
            return
        raise StoreError(f"session {key!r} was deleted or cleared under {_MAX_MERGES} saves in a row; save it again.")

    def _saving(self, entry: _Entry, mine: StoreChange, held: list[Any], now: str, merged: list[Merged],
                seen: list[StoredSession]) -> Callable[[StoredSession], StoreChange]:
        """The update function of a save: ``mine`` if nobody wrote since we read, else the merge
        with what they stored (computed under the store's lock and kept in ``merged``; what the
        store held is kept in ``seen``)."""
        session, key = entry.session, entry.session.id

        def change(stored: StoredSession) -> StoreChange:
            seen.append(stored)
            if mine.reset or stored.version == entry.version:
                return mine
            if not is_loaded(session.full_chat_history):
                raise _NeedsHistory(f"session {key!r}: a merge needs the whole history")  # never read the store inside its lock
            if stored.state is None or self._cleared(entry, stored.state, stored.message_count, len(held)):
                raise StoreConflictError(f"session {key!r} was deleted or cleared by another writer")
            result = self._merged(entry, Snapshot(key, stored.state, stored.records, stored.version), held)
            merged.append(result)
            stamps = {**session.arrived_at, **result.arrived}
            trace = ResizeTrace(session.trace)
            trace.merge(saved_trace(stored.state, f"session {key!r}"))  # the other writer's resizes too
            document = state_document(result.state, result.metadata, entry.created_at, now, lambda m: m.id in result.stored, trace)
            return StoreChange(document, [message_record(m, stamps.get(m.id or "", now)) for m in result.unsaved])

        return change

    def commit(self, session: Session, *, dry_run: bool = False, wait: bool = True) -> dict[str, Any]:
        """``session.commit()`` with the session saved after every step that changed it: the
        archive (its index, cursor and consumed ``used()`` records, merged under the store's lock
        with any other writer's save) and each journaled result, so a process that dies mid-commit
        leaves a pending archive the next ``commit()`` resumes, from any process.

        Raises:
            ConfigurationError: the session has no memory (give ``memory=`` here or to the session).
        """
        if self.memory is not None and (session.memory is None or session.memory.user != self.memory.user):
            session.memory = self.memory  # a tenant's sessions commit into that tenant's memory, whatever made them
        if session.memory is None:
            raise ConfigurationError("commit() needs long-term memory: SessionManager(..., memory=MemoryConfig(...)).")
        self.save(session)  # what the commit archives is stored first
        # one commit of a session at a time, across processes: the file memory store's lock, or
        # for any other memory store a lease in the session store (see stores/lease.py)
        store = session.memory.memory_store
        shared = contextlib.nullcontext() if hasattr(store, "owner_lock") else CommitLease(self.store, self.tenant, session.id)
        with shared as lease, owner_lock(store, ("session", f"{self.tenant}/{session.id}")):
            self.get(session.id)  # another process's commit or messages, merged in

            def checkpoint(_: Any) -> None:
                self.save(session)
                if lease is not None:
                    lease.renew()

            result = session.commit(dry_run=dry_run, wait=wait, checkpoint=None if dry_run else checkpoint)
            if not dry_run:
                self.save(session)
        return result

    def drain_commits(self) -> list[dict[str, Any]]:
        """Finish the commits started with ``wait=False`` of the cached sessions (one result each)."""
        results = []
        for entry in list(self._cache.values()):
            if (entry.session.state.archives or {}).get("pending") and entry.session.memory is not None:
                results.append(self.commit(entry.session))
        return results

    def delete(self, key: str) -> bool:
        """Remove a session from the store and the cache; False if there was none."""
        key = check_key(key)
        cached = self._cache.pop(key, None)
        return self.store.delete(self.tenant, key) or cached is not None

    def list_sessions(self) -> list[SessionInfo]:
        """This tenant's sessions, newest ``updated_at`` first."""
        return self.store.list(self.tenant)

    # -- reading stored sessions -------------------------------------------------------------
    def export(
        self, key: str, fmt: str = "json", directory: str | os.PathLike[str] | None = None, *, last: int | None = None,
        progress: Progress | None = None,
    ) -> str:
        """One stored session as ``json``, ``yaml``, ``md`` (Markdown) or ``txt``; or, with
        ``fmt="openviking"`` or ``"nanobot"``, written in that system's layout under ``directory``
        (returns the path written). A session imported from nanobot goes back to its own file
        name and header, byte-identical when nothing was added; any other one is written as
        nanobot 0.3.x writes (the key base64url in the name, ``last_archived`` 0).

        Args:
            key: the session.
            fmt: the format.
            directory: where ``openviking`` writes the session's folder, ``nanobot`` its file.
            last: only the newest ``last`` messages (None: all).
            progress: told ``(messages done, messages)``.
        """
        if fmt in FOREIGN_FORMATS:
            return self._export_foreign(key, fmt, directory, progress)
        if last is not None and (isinstance(last, bool) or not isinstance(last, int) or last < 0):
            raise ConfigurationError(f"last must be a whole number >= 0 or None, got {last!r}.")
        snapshot = self._snapshot(key)
        if last is not None:
            snapshot = Snapshot(snapshot.key, snapshot.state, snapshot.records[len(snapshot.records) - last :], snapshot.version)
        return export_snapshot(snapshot, fmt, check_progress(progress))

    def stats(self, key: str, *, progress: Progress | None = None) -> SessionStats:
        """Messages by role, duration and average reply length of a stored session."""
        return snapshot_stats(self._snapshot(key), check_progress(progress))

    def search(self, query: str, k: int = 10, *, key: str | None = None, mode: str = "ranked", options: Any = None,
               **settings: Any) -> list[SearchHit]:
        """The ``k`` messages of this tenant's stored sessions (or of session ``key``) that best
        match ``query``, best first; never another tenant's.

        Ranked (BM25 over stemmed, CJK- and date-aware terms) by the store's own index (JSONL
        terms files, SQLite FTS5, Postgres ``tsvector``), updated on every save: no session is
        loaded. ``mode="substring"``: messages containing ``query`` (case-insensitive), in store
        order. ``settings`` (``around``, ``since``, ``until``, ``dense``, ``reranker``...) or
        ``options``: a ``retrieval.search.SearchOptions``. Messages not saved yet are not found.
        """
        from session_graph.retrieval.search import make_options, search

        if "limit" in settings:  # the name ``k`` had before ranking
            k = settings.pop("limit")
        if key is not None:
            check_key(key)
        if mode == "substring":
            if not isinstance(query, str) or not query:
                raise ValueError("search needs a non-empty string.")
            return self.store.search(self.tenant, query, k) if key is None else self._substring_in(key, query, k)
        if mode != "ranked":
            raise ConfigurationError(f"mode must be 'ranked' or 'substring', got {mode!r}.")
        return search(self._search_source(), self.tenant, query, k, keys=None if key is None else [key],
                      options=make_options(options, settings))

    async def asearch(self, query: str, k: int = 10, **options: Any) -> list[SearchHit]:
        """Async twin of ``search`` (run in a worker thread, so the event loop never waits on the index)."""
        import asyncio

        return await asyncio.to_thread(self.search, query, k, **options)

    def search_sessions(self, query: str, k: int = 5, *, options: Any = None, **settings: Any) -> list[tuple[str, float]]:
        """The ``k`` stored sessions of this tenant that best match ``query``, as ``(key, score)``."""
        from session_graph.retrieval.search import make_options, search_sessions

        return search_sessions(self._search_source(), self.tenant, query, k, options=make_options(options, settings))

    def _search_source(self) -> Any:
        """The store's search index, or (a store without one) an index built by reading it."""
        index = getattr(self.store, "search_index", None)
        if index is None:
            from session_graph.stores.search_scan import ScanSource

            index = self.__dict__.get("_scan") or self.__dict__.setdefault("_scan", ScanSource(self.store))
        return index

    def _write_new(self, session: Session, records: list[dict[str, Any]], created: str, updated: str) -> None:
        """Write a session the store does not hold (an import), with its own times, and cache it."""
        state = session_state(session, created, updated)
        version = self.store.write(self.tenant, session.id, records, state)
        self._remember(session.id, _Entry(session, version, len(records), session.revision, created, state))

    def close(self) -> None:
        """Close the store."""
        self.store.close()

    # -- internals -----------------------------------------------------------------------------
    def _substring_in(self, key: str, query: str, k: int) -> list[SearchHit]:
        """The first ``k`` stored messages of session ``key`` containing ``query`` (that session's
        records only: a tenant-wide search cut at some limit could miss them)."""
        snapshot = self.store.read(self.tenant, key)
        needle, hits = query.casefold(), []
        for index, record in enumerate(snapshot.records if snapshot is not None else []):
            message = record_message(record, f"session {key!r} message {index}")
            text = message_text(message)
            if needle in text.casefold():
                hits.append(SearchHit(key, int(record.get("seq", index)), record.get("role", message.type), text, record.get("ts", "")))
                if len(hits) >= k:
                    break
        return hits

    def _snapshot(self, key: str) -> Any:
        snapshot = self.store.read(self.tenant, check_key(key))
        if snapshot is None:
            raise KeyError(f"no stored session {key!r} for tenant {self.tenant!r}")
        return snapshot

    def _load_flow(self, key: str, entry: _Entry | None, progress: Progress | None = None) -> Operation:
        """Load a stored session; a cached one with changes of its own is merged with what is stored."""
        if entry is not None and entry.session.revision != entry.revision:
            yield from self._merge_flow(key, entry)
            return entry.session
        started = time.perf_counter()
        held = prefix(entry.session.full_chat_history, entry.persisted) if entry is not None else []
        window = not held and getattr(self.store, "reads_windows", False)  # a lazy load: the middle stays in the store
        snapshot = yield Call("read", (self.tenant, key), {"since": len(held)} if held else {"window": True} if window else {})
        if snapshot is not None and held and self._cleared(entry, snapshot.state, None, len(held)):
            held = []
            snapshot = yield Call("read", (self.tenant, key))
        if snapshot is None:
            return None
        middle = self._middle(key, snapshot) if window else None
        state, metadata = yield Blocking(lambda: snapshot_state(snapshot, f"session {key!r}", held, progress, middle))
        raced = self._cache.get(key)
        if entry is None and raced is not None:  # another task loaded it meanwhile: one object per key, never two
            return (yield from self._get_flow(key, progress))
        log.info("session %r %s from the store: %d messages in %.2f s", key, "reloaded" if entry is not None else "loaded",
                 len(state.full_chat_history), time.perf_counter() - started)
        session = entry.session if entry is not None else self.session_factory(key)
        session.restore(state)
        if middle is not None and getattr(self.store, "search_index", None) is not None:
            bind_store(session, self.store.search_index, self.tenant)  # Session.search asks the store for the middle
        session.trace.replace(saved_trace(snapshot.state, f"session {key!r}"))
        session.metadata = metadata
        arrived = {r.get("id") or "": r.get("ts", "") for r in snapshot.records}
        session.arrived_at = {**session.arrived_at, **arrived} if held else arrived
        self._remember(key, _Entry(session, snapshot.version, len(state.full_chat_history), session.revision,
                                   snapshot.state.get("created_at", utc_now()), base_document(state, snapshot.state)))
        return session

    def _merge_flow(self, key: str, entry: _Entry) -> Operation:
        """Merge what another writer stored with the cached session's own changes, in place.

        Reads only the records after the ones this session holds (O(what the other wrote)).
        """
        session = entry.session
        held = session.full_chat_history[: entry.persisted]
        snapshot = yield Call("read", (self.tenant, key), {"since": len(held)})
        if snapshot is not None and held and self._cleared(entry, snapshot.state, None, len(held)):
            held = []
            snapshot = yield Call("read", (self.tenant, key))
        if snapshot is None:  # deleted meanwhile: what we hold is all there is
            entry.version, entry.persisted, entry.base = 0, 0, {}
            return
        log.info("session %r: merging %d message(s) another writer stored with this one's changes", key, len(snapshot.records))
        result = yield Blocking(lambda: self._merged(entry, snapshot, held))
        adopt(session, result)
        session.trace.merge(saved_trace(snapshot.state, f"session {key!r}"))
        entry.version, entry.persisted = snapshot.version, len(result.theirs.full_chat_history)
        entry.base = base_document(result.theirs, snapshot.state)
        entry.revision = -1  # our own messages and changes are not stored yet

    def _middle(self, key: str, snapshot: Snapshot) -> Middle:
        """How a lazily loaded session reads the messages between its first one and its window:
        one store read on first need, refused if the session was cleared or deleted since."""
        store, tenant, where, stamp = self.store, self.tenant, f"session {key!r}", resets(snapshot.state)

        def load(stop: int) -> list[BaseMessage]:
            with paused_gc():  # one pause over reading and decoding: the collector runs once after, not twice
                stored = store.read(tenant, key, since=1)
                if stored is None or resets(stored.state) != stamp:
                    raise StoreError(f"{where} was cleared or deleted in the store since it was loaded; get it again.")
                return [record_message(r, where) for r in stored.records if int(r.get("seq", stop)) < stop]

        ids = getattr(store, "ids", None)
        return load, (lambda stop: ids(tenant, key, 1, stop)) if ids is not None else None

    @staticmethod
    def _cleared(entry: _Entry | None, state: dict[str, Any], count: int | None, held: int) -> bool:
        """Whether the first ``held`` stored messages are no longer the ones the entry read
        (another writer cleared the session since: fewer messages, or another ``resets``)."""
        count = int(state.get("message_count", 0)) if count is None else count
        return count < held or (entry is not None and resets(state) != resets(entry.base))

    def _merged(self, entry: _Entry, snapshot: Snapshot, held: list[Any]) -> Merged:
        """What merging ``snapshot`` (records from ``len(held)`` on) with the entry's session gives (pure)."""
        self.merges += 1
        result = merge_snapshot(entry.base, entry.session, snapshot, held, entry.persisted)
        if result.dropped_fold:
            log.warning("session %r: another writer folded into the memo too; its memo is kept and this writer's "
                        "messages are folded again by the next resize", entry.session.id)
        return result

    def _run(self, flow: Operation) -> Any:
        return drive(self.store, flow)

    async def _arun(self, flow: Operation) -> Any:
        return await adrive(self.store, flow)

    def _remember(self, key: str, entry: _Entry) -> None:
        self._cache[key] = entry
        self._cache.move_to_end(key)
        while len(self._cache) > self.cache_size:
            victim = next((k for k, e in self._cache.items() if e.session.revision == e.revision), None)
            if victim is None or victim == key:
                break  # every other entry has unsaved changes: keep them rather than lose work
            del self._cache[victim]
