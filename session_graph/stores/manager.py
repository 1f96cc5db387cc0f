"""SessionManager: sessions by key over a store, with a bounded cache.

``get_or_create(key)`` returns the live Session for a key (the same object while it stays
in the cache) and notices when another process changed the store: the cached session is
reloaded in place and, if it has changes of its own, merged with what the other writer
stored (``stores.merge``), so nothing is lost. ``save(session)`` is one store ``update``:
under the store's writer lock it appends only the messages the store does not have and
replaces the small state document, or, if another writer got in since we read, merges
what they stored with our changes and writes that, in the same locked step (never a
retry). Two writers on one key thus keep both windows, both counters and what each memo
really folded. The cache is LRU; an entry with unsaved changes is never evicted. The machinery
lives beside it: the cache (``SessionCache``) and loads in ``stores.session_load``, saves in
``stores.session_save``, commits in ``stores.session_commit``; the manager's methods delegate to
them, each handing over the manager as a declared ``Protocol``. Imports of other systems' files
(nanobot, OpenViking, documents) are ``stores.interop``'s functions, taken as methods by name.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
import logging
import os
from typing import Any

from session_graph._base.progress import Progress, check_progress
from session_graph.errors import ConfigurationError
from session_graph.memory.config import MemoryConfig
from session_graph.session import Session
from session_graph.stores import interop
from session_graph.stores.base import SearchHit, SessionInfo, SessionStore, Snapshot, call_async, check_key
from session_graph.stores.codec import message_text, record_message, unencodable
from session_graph.stores.dsn import parse_target
from session_graph.stores.flows import Operation, adrive, drive
from session_graph.stores.formats import SessionStats, export_snapshot, snapshot_stats
from session_graph.stores.jsonl import JsonlStore
from session_graph.stores.postgres import PostgresStore
from session_graph.stores.session_append import appended
from session_graph.stores.session_commit import commit, drain_commits, scoped_memory
from session_graph.stores.session_load import SessionCache, get_flow, get_or_create_flow, stored_snapshot
from session_graph.stores.session_save import save_flow
from session_graph.stores.sql import SqliteStore

__all__ = ["SessionManager", "open_store"]

log = logging.getLogger(__name__)  # stores.session_load logs loads and merges on it


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


class SessionManager:
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

    Attributes:
        cache: the live sessions by key (a ``SessionCache``: LRU, never evicting unsaved changes).
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
        if memory is not None and not isinstance(memory, MemoryConfig):
            raise ConfigurationError(f"memory must be a MemoryConfig, got {type(memory).__name__}.")
        self.memory = memory = scoped_memory(memory, self.tenant)
        self._own_factory = session_factory
        self.session_factory = session_factory or (lambda key: Session(key, memory=memory))
        self.cache = SessionCache(cache_size)
        self.merges = 0  # saves or loads that merged another writer's changes (for measurement)
        self._owns_store = True  # False for a ``for_tenant`` manager: the store is its parent's to close

    @property
    def cache_size(self) -> int:
        """How many sessions the LRU cache keeps (beyond those with unsaved changes)."""
        return self.cache.size

    @cache_size.setter
    def cache_size(self, value: int) -> None:
        self.cache.size = value

    def for_tenant(self, tenant: str) -> SessionManager:
        """A manager over the same store that sees only ``tenant``'s sessions; its long-term memory
        is ``tenant``'s (``memory.for_tenant(tenant)``: the same user and agent ids in the tenant's
        own namespaces), never shared with this manager's or another tenant's."""
        memory = self.memory.for_tenant(None) if self.memory is not None else None  # scoped to ``tenant`` by the new manager
        shared = SessionManager(self.store, tenant=tenant, cache_size=self.cache_size, session_factory=self._own_factory,
                                memory=memory)
        shared._owns_store = False  # its close() (a ``with`` per request) must not close the store under this manager
        return shared

    # -- sessions ----------------------------------------------------------------------------
    # Each operation is written once, as a generator of store calls (``Call``) and blocking
    # work (``Blocking``) in ``stores.session_load`` / ``stores.session_save``, driven by ``_run``
    # (sync) and ``_arun`` (async: store calls through their async twins, blocking work in a
    # worker thread, so an event loop never waits on disk).
    def get(self, key: str, *, progress: Progress | None = None) -> Session | None:
        """The session for ``key``, or None if the store has none (and none is cached).

        ``progress``: told ``(messages decoded, messages)`` while a stored session loads.
        """
        return self._run(get_flow(self, key, check_progress(progress)))

    async def aget(self, key: str, *, progress: Progress | None = None) -> Session | None:
        """Async twin of :meth:`get`."""
        return await self._arun(get_flow(self, key, check_progress(progress)))

    def get_or_create(self, key: str, *, progress: Progress | None = None) -> Session:
        """The session for ``key``: cached, loaded (``progress`` as in :meth:`get`), or new (not stored until ``save``)."""
        return self._run(get_or_create_flow(self, key, check_progress(progress)))

    async def aget_or_create(self, key: str, *, progress: Progress | None = None) -> Session:
        """Async twin of :meth:`get_or_create`."""
        return await self._arun(get_or_create_flow(self, key, check_progress(progress)))

    def save(self, session: Session, *, durable: bool = True) -> None:
        """Persist a session: append its new messages, replace its state. O(new messages).

        A session with no change since its last save is not written again. Edits in place
        of the memo, settings and metadata (at any depth) are changes: seen by content when
        the save reads ``session.revision``. ``durable=False``: written (it survives
        the process) but not flushed to disk yet where the store can defer that (JSONL: no
        fsync; the next durable save flushes it); other stores write as always.
        """
        try:
            if not appended(self, session, durable):  # the common save (appends, a lite prune) at once
                self._run(save_flow(self, session, durable))
        except UnicodeEncodeError as error:  # a lone surrogate the user put in the memo or metadata
            raise unencodable(session, error) from None

    async def asave(self, session: Session, *, durable: bool = True) -> None:
        """Async twin of :meth:`save`."""
        try:
            await self._arun(save_flow(self, session, durable))
        except UnicodeEncodeError as error:
            raise unencodable(session, error) from None

    def unsaved(self, session: Session) -> int:
        """How many messages of ``session`` the store does not hold yet (all of them if it is not managed here)."""
        entry = self.cache.get(session.id)
        if entry is None or entry.session is not session:
            return len(session.full_chat_history)
        return len(session.full_chat_history) - entry.persisted

    def commit(self, session: Session, *, dry_run: bool = False, wait: bool = True) -> dict[str, Any]:
        """``session.commit()`` with the session saved after every step that changed it: the
        archive (its index, cursor and consumed ``used()`` records, merged under the store's lock
        with any other writer's save) and each journaled result, so a process that dies mid-commit
        leaves a pending archive the next ``commit()`` resumes, from any process.

        Raises:
            ConfigurationError: the session has no memory (give ``memory=`` here or to the session).
        """
        return commit(self, session, dry_run=dry_run, wait=wait)

    def drain_commits(self) -> list[dict[str, Any]]:
        """Finish the commits started with ``wait=False`` of the cached sessions (one result each)."""
        return drain_commits(self)

    def delete(self, key: str) -> bool:
        """Remove a session from the store and the cache; False if there was none."""
        key = check_key(key)
        cached = self.cache.pop(key)
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
        if fmt in interop.FOREIGN_FORMATS:
            return interop.export_foreign(self, key, fmt, directory, progress)
        if last is not None and (isinstance(last, bool) or not isinstance(last, int) or last < 0):
            raise ConfigurationError(f"last must be a whole number >= 0 or None, got {last!r}.")
        snapshot = stored_snapshot(self.store, self.tenant, key)
        if last is not None:
            snapshot = Snapshot(snapshot.key, snapshot.state, snapshot.records[len(snapshot.records) - last :], snapshot.version)
        return export_snapshot(snapshot, fmt, check_progress(progress))

    def stats(self, key: str, *, progress: Progress | None = None) -> SessionStats:
        """Messages by role, duration and average reply length of a stored session."""
        return snapshot_stats(stored_snapshot(self.store, self.tenant, key), check_progress(progress))

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

    # -- other systems' files: stores/interop.py's functions, taken as methods by name (as Session's groups)
    import_nanobot = interop.import_nanobot
    import_document = interop.import_document
    import_openviking = interop.import_openviking

    def close(self) -> None:
        """Close the store (``with`` / ``async with SessionManager(...) as manager:`` closes it on the way
        out; a Postgres store's async pool, opened by the async methods: ``aclose`` on its loop); a
        ``for_tenant`` manager leaves its parent's store open."""
        if self._owns_store:
            self.store.close()

    async def aclose(self) -> None:
        """Async twin of :meth:`close`: also closes a Postgres store's async pool, on this loop."""
        if self._owns_store:
            await call_async(self.store, "close")

    def __enter__(self) -> SessionManager:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()  # a store's connection pool is never left to the garbage collector

    async def __aenter__(self) -> SessionManager:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

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

    def _run(self, flow: Operation) -> Any:
        return drive(self.store, flow)

    async def _arun(self, flow: Operation) -> Any:
        return await adrive(self.store, flow)
