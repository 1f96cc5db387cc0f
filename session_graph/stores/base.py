"""What every store shares: the protocol, the stored shapes, key rules, timestamps.

A store keeps, per (tenant, key), an append-only list of message records and one small
state document (memo, settings, counters, metadata, the window as message ids). ``write``
appends records at the store's end and replaces the state in one atomic step, under a
lock that other processes respect, so concurrent writers lose nothing and agree on one
order.

Every store is async-capable: the protocol's async twins (``aread``, ``awrite``...) default
to running the sync method in a worker thread (``ThreadedAsync``), so an async agent never
blocks its event loop on disk; a backend with a native async driver (Postgres) overrides them.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from session_graph._ids import utc_now
from session_graph.errors import InvalidKeyError, StoreConflictError, StoreError

__all__ = [
    "MAX_KEY_LENGTH",
    "SCHEMA_VERSION",
    "Rebase",
    "SearchHit",
    "SessionInfo",
    "SessionStore",
    "Snapshot",
    "ThreadedAsync",
    "call_async",
    "check_expected",
    "check_key",
    "check_schema",
    "conflict",
    "utc_now",
]

SCHEMA_VERSION = 1
MAX_KEY_LENGTH = 256


def check_key(key: Any, what: str = "session key") -> str:
    """A key as given, or an error naming what is wrong with it.

    Keys are any string of 1 to 256 characters (``channel:chat_id``, ``user/42``...) except
    ones that could escape a store's directory: with a NUL or another control character,
    starting with ``/``, ``\\`` or ``~``, or with a ``..`` path segment.
    """
    if not isinstance(key, str) or not key:
        raise InvalidKeyError(f"a {what} must be a non-empty string, got {key!r}.")
    if len(key) > MAX_KEY_LENGTH:
        raise InvalidKeyError(f"a {what} is at most {MAX_KEY_LENGTH} characters; {key[:40]!r}... has {len(key)}.")
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
    records: list[dict[str, Any]]
    version: int


@dataclass(frozen=True, slots=True)
class SessionInfo:
    """One line of ``list_sessions()``."""

    key: str
    created_at: str
    updated_at: str
    message_count: int
    metadata: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class SearchHit:
    """A message that contains the searched text."""

    key: str
    seq: int
    role: str
    text: str
    ts: str


@dataclass(frozen=True, slots=True)
class Rebase:
    """What a conditional write does instead of failing when another writer got in first.

    The store calls ``fn`` under its writer lock with a ``Snapshot`` of the stored state and
    the records from ``since`` on (what the caller does not hold), and writes the records and
    state ``fn`` returns, in the same locked step: no other writer can get in between, so a
    merge never has to be retried. ``fn`` may raise ``StoreConflictError`` to give up.
    """

    since: int
    fn: Callable[[Snapshot], tuple[list[dict[str, Any]], dict[str, Any]]]


@runtime_checkable
class SessionStore(Protocol):
    """Persistence for sessions; every backend passes the same conformance suite."""

    def write(
        self,
        tenant: str,
        key: str,
        records: list[dict[str, Any]],
        state: dict[str, Any],
        *,
        reset: bool = False,
        expect_version: int | None = None,
        rebase: Rebase | None = None,
    ) -> int:
        """Append ``records`` (numbered from the store's end) and replace the state, atomically.

        ``reset`` drops the stored messages first (``Session.clear``). ``expect_version``: write
        only if the stored version is still this one (0: not stored yet); else, with ``rebase``,
        write what ``rebase.fn`` makes of what is stored (under the same lock), or without it
        raise ``StoreConflictError`` and write nothing. Returns the new version.
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


_METHODS = ("write", "read", "version", "delete", "list", "search", "close")


class ThreadedAsync:
    """Async twins of a store's methods: the sync method, run in a worker thread.

    Mixed into the JSONL and SQLite stores; a backend with a native async driver overrides
    the ones it can do better.
    """

    async def awrite(
        self,
        tenant: str,
        key: str,
        records: list[dict[str, Any]],
        state: dict[str, Any],
        *,
        reset: bool = False,
        expect_version: int | None = None,
        rebase: Rebase | None = None,
    ) -> int:
        """Async twin of ``write``."""
        return await asyncio.to_thread(  # type: ignore[attr-defined]
            self.write, tenant, key, records, state, reset=reset, expect_version=expect_version,  # type: ignore[attr-defined]
            rebase=rebase,
        )

    async def aread(self, tenant: str, key: str, *, since: int = 0) -> Snapshot | None:
        """Async twin of ``read``."""
        return await asyncio.to_thread(self.read, tenant, key, since=since)  # type: ignore[attr-defined]

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
