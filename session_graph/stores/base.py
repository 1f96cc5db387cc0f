"""What every store shares: the protocol, the stored shapes, key rules, timestamps.

A store keeps, per (tenant, key), an append-only list of message records and one small
state document (memo, settings, counters, metadata, the window as message ids).

Every change goes through one primitive, ``update(tenant, key, fn)``: under the store's
writer lock (JSONL: ``flock``; SQLite: ``BEGIN IMMEDIATE``; Postgres: the session row
``FOR UPDATE``) the store hands ``fn`` what it holds now (``StoredSession``: the state document,
version, message count, and the records a caller asked for), then appends the records and
replaces the state of the ``StoreChange`` that ``fn`` returns, in the same atomic step. No other
writer can get in between, so a caller that merges never retries and concurrent writers
lose nothing and agree on one order. ``write`` (append and replace, optionally only if the
version is still the one read) is one such function, written once in ``StoreBase``.

Every store is async-capable: the protocol's async twins (``aread``, ``awrite``...) default
to running the sync method in a worker thread (``ThreadedAsync``), so an async agent never
blocks its event loop on disk; a backend with a native async driver (Postgres) overrides them.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, Self, runtime_checkable

from session_graph._base.ids import MAX_ID_LENGTH, check_id_length, utc_now
from session_graph.errors import InvalidKeyError, StoreConflictError, StoreError
from session_graph.retrieval.hits import SearchHit

__all__ = [
    "MAX_KEY_LENGTH",
    "SCHEMA_VERSION",
    "SearchHit",
    "SessionInfo",
    "SessionStore",
    "Snapshot",
    "StoreBase",
    "StoreChange",
    "StoredSession",
    "ThreadedAsync",
    "UpdateFn",
    "call_async",
    "check_change",
    "check_expected",
    "check_key",
    "check_schema",
    "conflict",
    "resets",
    "update_options",
    "utc_now",
]

SCHEMA_VERSION = 1
MAX_KEY_LENGTH = MAX_ID_LENGTH  # the one cap of identifiers that become keys (``_base.ids``)


def check_key(key: Any, what: str = "session key") -> str:
    """A key as given, or an error naming what is wrong with it.

    Keys are any string of 1 to 256 characters (``channel:chat_id``, ``user/42``...) except
    ones that could escape a store's directory: with a NUL or another control character,
    starting with ``/``, ``\\`` or ``~``, or with a ``..`` path segment.
    """
    if not isinstance(key, str) or not key:
        raise InvalidKeyError(f"a {what} must be a non-empty string, got {key!r}.")
    check_id_length(key, f"the {what}")
    if any(ord(ch) < 32 or ord(ch) == 127 for ch in key):
        raise InvalidKeyError(f"the {what} {key!r} contains a NUL or control character; remove it.")
    if key[0] in "/\\~" or ".." in key.replace("\\", "/").split("/"):
        raise InvalidKeyError(
            f"the {what} {key!r} looks like a path that escapes the store (absolute, ~ or ..); use a plain name."
        )
    return key


def check_expected(expect_version: int | None, stored: int, where: str) -> bool:
    """Whether a conditional write found another version stored (a conflict)."""
    return expect_version is not None and stored != expect_version


def conflict(expect_version: int | None, stored: int, where: str) -> None:
    """Raise ``StoreConflictError`` for a conditional write that found another version stored."""
    if check_expected(expect_version, stored, where):
        raise StoreConflictError(
            f"{where} changed since it was read (stored version {stored}, expected {expect_version}); "
            "nothing was written: read it again and merge.",
            stored_version=stored,
        )


def check_schema(state: dict[str, Any], where: str) -> dict[str, Any]:
    """The state document if this version of the library can read it."""
    version = state.get("schema", SCHEMA_VERSION)
    if not isinstance(version, int) or version > SCHEMA_VERSION:
        raise StoreError(
            f"{where} was written by a newer session_graph (schema {version!r}, this one reads up to "
            f"{SCHEMA_VERSION}); upgrade session_graph to open it. Nothing was changed."
        )
    return state


@dataclass(frozen=True, slots=True)
class Snapshot:
    """One stored session: its state document and its message records, oldest first."""

    key: str
    state: dict[str, Any]
    records: Sequence[dict[str, Any]]  # a list, or ``stores.records.Records`` decoded one at a time as read
    version: int


@dataclass(frozen=True, slots=True)
class SessionInfo:
    """One line of ``list_sessions()``."""

    key: str
    created_at: str
    updated_at: str
    message_count: int
    metadata: dict[str, Any] = field(default_factory=dict)


def resets(state: dict[str, Any] | None) -> int:
    """How many times the stored messages of a session were dropped (``StoreChange.reset``).

    Kept by the store in the state document, like ``version`` and ``message_count``: a reader
    that holds the first N messages knows they are still the stored ones only if this has
    not changed since it read them (a cleared session may have grown past N again).
    """
    return int((state or {}).get("resets", 0))


@dataclass(frozen=True, slots=True)
class StoredSession:
    """What a store holds for one key, read under its writer lock and handed to an ``update`` function.

    Attributes:
        key: the session key.
        state: the stored state document, or None when nothing is stored under the key.
        version: the stored version (0: nothing stored yet); every write adds one.
        message_count: how many message records the store holds for the key.
        records: the records from ``update``'s ``since`` on, oldest first (empty without ``since``,
            and read only when the store holds records past ``since``).
    """

    key: str
    state: dict[str, Any] | None
    version: int
    message_count: int
    records: list[dict[str, Any]] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class StoreChange:
    """What an ``update`` function asks the store to write, in one atomic step.

    Attributes:
        state: the new state document; it replaces the stored one (the store adds ``key``,
            ``tenant``, ``message_count``, ``resets`` and keeps the first ``created_at``).
        records: message records to append, numbered (``seq``) from the store's end.
        reset: drop the stored messages first (``Session.clear``); ``records`` then start at 0.
    """

    state: dict[str, Any]
    records: list[dict[str, Any]] = field(default_factory=list)
    reset: bool = False


UpdateFn = Callable[[StoredSession], StoreChange | None]
"""An ``update`` function: what is stored -> what to write (None: nothing)."""


def check_change(change: Any, fn: Any) -> StoreChange | None:
    """What an update function returned, if it is a ``StoreChange`` (or None: write nothing)."""
    if change is None or isinstance(change, StoreChange):
        if change is not None and not isinstance(change.state, dict):
            raise TypeError(f"the update function {fn!r} returned a StoreChange whose state is not a dict: {change.state!r}")
        return change
    raise TypeError(f"the update function {fn!r} must return a StoreChange or None, got {type(change).__name__}: {change!r:.80}")


@runtime_checkable
class SessionStore(Protocol):
    """Persistence for sessions; every backend passes the same conformance suite."""

    def update(self, tenant: str, key: str, fn: UpdateFn, *, since: int | None = None) -> int:
        """Change one session atomically: ``fn`` sees what is stored and says what to write.

        Under the store's writer lock (other processes wait), the store calls ``fn`` once with
        a ``StoredSession`` (the state document, version and message count, plus the records from
        ``since`` on when ``since`` is given and the store holds more than ``since``), then
        appends the records and replaces the state of the ``StoreChange`` it returns, atomically.
        ``fn`` returning None writes nothing; ``fn`` raising writes nothing and the error
        reaches the caller. ``fn`` must be quick and must not call the store (it holds the
        lock). Returns the new version (the stored one, or 0, when nothing was written).
        """
        ...

    def write(
        self,
        tenant: str,
        key: str,
        records: list[dict[str, Any]],
        state: dict[str, Any],
        *,
        reset: bool = False,
        expect_version: int | None = None,
    ) -> int:
        """Append ``records`` (numbered from the store's end) and replace the state, atomically.

        An ``update`` (``StoreBase`` writes it once for every store). ``reset`` drops the
        stored messages first (``Session.clear``). ``expect_version``: write only if the stored
        version is still this one (0: not stored yet), else raise ``StoreConflictError`` and
        write nothing. Returns the new version.
        """
        ...

    def read(self, tenant: str, key: str, *, since: int = 0) -> Snapshot | None:
        """The stored session, or None; ``since``: only the records from that ``seq`` on."""
        ...

    def version(self, tenant: str, key: str) -> int | None:
        """The stored version (changes on every write), cheaply; None if absent."""
        ...

    def delete(self, tenant: str, key: str) -> bool:
        """Remove a session; False if there was none."""
        ...

    def list(self, tenant: str) -> list[SessionInfo]:
        """Every session of a tenant, newest ``updated_at`` first."""
        ...

    def search(self, tenant: str, text: str, limit: int = 100) -> list[SearchHit]:
        """Messages of a tenant containing ``text`` (case-insensitive)."""
        ...

    def close(self) -> None:
        """Release connections and handles."""
        ...


_METHODS = ("update", "write", "read", "version", "delete", "list", "search", "close")


class ThreadedAsync:
    """Async twins of a store's methods: the sync method, run in a worker thread.

    Mixed into the JSONL and SQLite stores; a backend with a native async driver overrides
    the ones it can do better.
    """

    async def aupdate(self, tenant: str, key: str, fn: UpdateFn, *, since: int | None = None, **options: Any) -> int:
        """Async twin of ``update`` (``fn`` runs in the worker thread, under the lock; ``sync=False``
        passed on to stores that declare ``defers_sync``)."""
        return await asyncio.to_thread(self.update, tenant, key, fn, since=since, **options)  # type: ignore[attr-defined]

    async def aread(self, tenant: str, key: str, *, since: int = 0, **options: Any) -> Snapshot | None:
        """Async twin of ``read`` (``window=True`` passed on to stores that read windows)."""
        return await asyncio.to_thread(self.read, tenant, key, since=since, **options)  # type: ignore[attr-defined]

    async def aversion(self, tenant: str, key: str) -> int | None:
        """Async twin of ``version``."""
        return await asyncio.to_thread(self.version, tenant, key)  # type: ignore[attr-defined]

    async def adelete(self, tenant: str, key: str) -> bool:
        """Async twin of ``delete``."""
        return await asyncio.to_thread(self.delete, tenant, key)  # type: ignore[attr-defined]

    async def alist(self, tenant: str) -> list[SessionInfo]:
        """Async twin of ``list``."""
        return await asyncio.to_thread(self.list, tenant)  # type: ignore[attr-defined]

    async def asearch(self, tenant: str, text: str, limit: int = 100) -> list[SearchHit]:
        """Async twin of ``search``."""
        return await asyncio.to_thread(self.search, tenant, text, limit)  # type: ignore[attr-defined]

    async def aclose(self) -> None:
        """Async twin of ``close``."""
        await asyncio.to_thread(self.close)  # type: ignore[attr-defined]

    # ``with JsonlStore(path) as store:`` / ``async with``: closed on the way out, whatever happens
    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()  # type: ignore[attr-defined]

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


class StoreBase(ThreadedAsync):
    """What the built-in stores share: ``write`` as one ``update``, and the async twins.

    A backend implements ``update``, ``read``, ``version``, ``delete``, ``list``, ``search``
    and ``close``; a user's store may derive from this class to get ``write`` and the async
    twins (run in a worker thread) for free.
    """

    def write(
        self,
        tenant: str,
        key: str,
        records: list[dict[str, Any]],
        state: dict[str, Any],
        *,
        reset: bool = False,
        expect_version: int | None = None,
    ) -> int:
        """Append ``records`` and replace the state, atomically (see ``SessionStore.write``)."""
        return self.update(tenant, key, _writing(key, records, state, reset, expect_version))  # type: ignore[attr-defined]

    async def awrite(
        self,
        tenant: str,
        key: str,
        records: list[dict[str, Any]],
        state: dict[str, Any],
        *,
        reset: bool = False,
        expect_version: int | None = None,
    ) -> int:
        """Async twin of ``write`` (through ``aupdate``, so a native async backend serves it)."""
        return await self.aupdate(tenant, key, _writing(key, records, state, reset, expect_version))


def _writing(key: str, records: list[dict[str, Any]], state: dict[str, Any], reset: bool,
             expect_version: int | None) -> UpdateFn:
    """The update function of a write: the change as given, if the stored version is the expected one."""

    def write(stored: StoredSession) -> StoreChange:
        conflict(expect_version, stored.version, f"session {key!r}")
        return StoreChange(state, records, reset)

    return write


def update_options(store: Any, sync: bool) -> dict[str, Any]:
    """The extra keywords of an ``update`` that need not be made durable at once: ``sync=False``
    for a store that declares ``defers_sync`` (the JSONL store skips its fsync; the next synced
    write flushes it), nothing for the others (they write as always)."""
    return {} if sync or not getattr(store, "defers_sync", False) else {"sync": False}


async def call_async(store: Any, method: str, *args: Any, **kwargs: Any) -> Any:
    """``store.a<method>(...)`` when the store has it, else ``store.<method>`` in a worker thread.

    Lets a user's store that implements only the sync protocol serve async agents too.
    """
    if method not in _METHODS:
        raise ValueError(f"no store method {method!r}")
    native = getattr(store, f"a{method}", None)
    if native is not None:
        return await native(*args, **kwargs)
    return await asyncio.to_thread(getattr(store, method), *args, **kwargs)
