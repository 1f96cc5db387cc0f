"""The Postgres store (psycopg 3): the SQL store's implementation on Postgres's dialect.

Connections come from a pool with health checks, so a dropped connection is replaced
instead of failing every later call; the async twins run the same SQL flows on psycopg's
async pool, on the caller's event loop: one pool per loop, as psycopg's async pool is bound to the
loop that opened it (a second ``asyncio.run``, a notebook cell, a CLI command, gets a pool of its
own; a pool whose loop has ended is closed then, without that loop).
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
import contextlib
import logging
import threading
from typing import Any

from session_graph.errors import StoreError
from session_graph.stores.base import SearchHit, SessionInfo, Snapshot, UpdateFn
from session_graph.stores.dsn import redact, scrub
from session_graph.stores.search_sql import POSTGRES_SEARCH
from session_graph.stores.sql import Dialect, Flow, SqlStore, adrive_sql, drive_sql

__all__ = ["PostgresStore"]

log = logging.getLogger(__name__)


class PostgresStore(SqlStore):
    """Sessions in Postgres (psycopg 3), for many processes or machines.

    Connections come from a pool that checks each one before use (a connection the server
    dropped is replaced); the async methods use psycopg's async pool on the caller's event
    loop, so an async agent never blocks it on the database.

    Args:
        dsn: a libpq connection string, e.g. ``postgresql://user@host:5432/db``.
        connect_timeout: seconds before an unreachable server is reported.
        max_size: the most connections each pool opens.
        create: False creates no table (reading only; a database without them reads as empty).
    """

    search_dialect = POSTGRES_SEARCH
    dialect = Dialect(mark="%s", begin=None, lock_row=" FOR UPDATE", contains="strpos(lower(text), %s) > 0",
                       has_table="SELECT to_regclass('sg_sessions')")

    def __init__(self, dsn: str, *, connect_timeout: int = 5, max_size: int = 4, create: bool = True) -> None:
        try:
            import psycopg
            from psycopg_pool import ConnectionPool
        except ImportError as error:  # pragma: no cover - depends on the install
            raise StoreError("the Postgres store needs psycopg 3 and psycopg-pool: pip install 'session_graph[postgres]'") from error
        self._where = redact(dsn)
        self._dsn = dsn
        self._kwargs = {"connect_timeout": connect_timeout}
        self._max_size = max_size
        self._apools: dict[asyncio.AbstractEventLoop, Any] = {}  # the async pool of each event loop that used the store
        self._apool: Any = None  # the one opened or used last
        self._aclosed = False  # aclose() ran: the async twins fail as the sync methods after close()
        self._guards: dict[asyncio.AbstractEventLoop, asyncio.Task[None]] = {}  # each pool's closer at its loop's end
        self._alock = threading.Lock()
        try:
            with psycopg.connect(dsn, **self._kwargs):  # fail fast, and clearly, when unreachable
                pass
        except psycopg.Error as error:
            raise StoreError(f"cannot reach Postgres at {self._where}: {scrub(str(error).strip(), dsn)}") from None
        self._pool = ConnectionPool(dsn, min_size=1, max_size=max_size, kwargs=self._kwargs,
                                    check=ConnectionPool.check_connection, open=True, name="session_graph")
        self._run(self._setup_flow(create))

    @contextlib.contextmanager
    def _errors(self) -> Iterator[None]:
        import psycopg
        from psycopg_pool import PoolTimeout

        try:
            yield
        except (psycopg.OperationalError, PoolTimeout) as error:
            raise StoreError(f"the Postgres store at {self._where} is unavailable: {scrub(str(error).strip(), self._dsn)}") from None

    def _run(self, flow: Flow) -> Any:
        with self._errors(), self._pool.connection() as connection, connection.transaction():
            return drive_sql(connection.cursor(), flow)

    async def _arun(self, flow: Flow) -> Any:
        with self._errors():
            async with self._async_pool().connection() as connection, connection.transaction():
                return await adrive_sql(connection.cursor(), flow)

    def _async_pool(self) -> Any:
        """The async pool of the running event loop, made on first use; the pools of loops that
        have ended are closed here first (``_dispose``).

        It opens the connections it uses (up to ``max_size``), not ``max_size`` per event loop:
        a server or role with few free connections still serves. A pool that grows connects in a
        task of its own, and psycopg_pool's worker takes the cancellation ``asyncio.run`` sends
        as it ends for a failed connect (so does a broken or expired connection's replacement),
        and ``asyncio.run`` waited for it forever; a guard task (``_close_at_loop_end``) closes
        the pool on its loop as that loop ends, which stops the worker."""
        from psycopg_pool import AsyncConnectionPool

        loop = asyncio.get_running_loop()
        with self._alock:
            self._drop_ended()
            pool = self._apools.get(loop)
            if pool is None or self._guards[loop].done():  # (its guard cancelled, the loop running on: closed by it)
                pool = self._apools[loop] = AsyncConnectionPool(self._dsn, min_size=0, max_size=self._max_size, kwargs=self._kwargs,
                                                                check=AsyncConnectionPool.check_connection, open=False,
                                                                name="session_graph-async")
                self._guards[loop] = loop.create_task(_close_at_loop_end(pool), name="session_graph-async-pool-guard")
            self._apool = pool
            return pool

    async def _aopen(self) -> None:
        if self._aclosed:
            raise StoreError(f"the Postgres store at {self._where} is closed (aclose() ran): open a new store")
        pool = self._async_pool()
        if pool.closed:
            with self._errors():  # closed by hand: a StoreError, as the sync methods after close() (not PoolClosed)
                await pool.open()

    # -- native async twins -----------------------------------------------------------------------
    async def aupdate(self, tenant: str, key: str, fn: UpdateFn, *, since: int | None = None) -> int:
        self._writable()
        await self._aopen()
        return await self._arun(self._update_flow(tenant, key, fn, since))

    async def aread(self, tenant: str, key: str, *, since: int = 0, window: bool = False) -> Snapshot | None:
        return await self._aquery(None, self._read_flow(tenant, key, since, window))

    async def aversion(self, tenant: str, key: str) -> int | None:
        return await self._aquery(None, self._version_flow(tenant, key))

    async def adelete(self, tenant: str, key: str) -> bool:
        return await self._aquery(False, self._delete_flow(tenant, key))

    async def alist(self, tenant: str) -> list[SessionInfo]:
        return await self._aquery([], self._list_flow(tenant))

    async def asearch(self, tenant: str, text: str, limit: int = 100) -> list[SearchHit]:
        return await self._aquery([], self._search_flow(tenant, text, limit))

    async def _aquery(self, empty: Any, flow: Flow) -> Any:
        """Run a reading flow on the async pool; ``empty`` when the database has no tables."""
        if self._empty:
            flow.close()
            return empty
        await self._aopen()
        return await self._arun(flow)

    async def aclose(self) -> None:
        """Close the connection pools: the async pool of this loop, those of loops that have
        ended, that of a loop running in another thread (on it), and the sync pool."""
        self._aclosed = True
        running = asyncio.get_running_loop()
        with self._alock:
            pools = list(self._apools.items())
        for loop, pool in pools:
            if loop is running:
                await pool.close()
            elif loop.is_closed():
                _dispose(pool, self._where)
            elif loop.is_running():
                await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(pool.close(), loop))
            guard = self._guards.get(loop)
            if guard is not None and not loop.is_closed():
                loop.call_soon_threadsafe(guard.cancel)  # its pool is closed: nothing to wait for
        self._pool.close()
        self._warn_open()

    def close(self) -> None:
        """Close the connection pool, and the async pools of loops that have ended (an async pool
        whose loop still runs: ``await store.aclose()`` on that loop)."""
        self._pool.close()
        with self._alock:
            self._drop_ended()
        self._warn_open()

    def _drop_ended(self) -> None:
        """Close and forget the async pools of event loops that have ended (``_dispose``); under ``_alock``."""
        for ended in [loop for loop in self._apools if loop.is_closed()]:
            _dispose(self._apools.pop(ended), self._where)
            self._guards.pop(ended, None)

    def _warn_open(self) -> None:
        if any(not pool.closed for pool in self._apools.values()):  # said, not left to the garbage collector silently
            log.warning("Postgres store closed with its async pool still open (its connections stay until the process "
                        "exits): close it with `await store.aclose()` (or `await manager.aclose()`) on the loop that used it")


async def _close_at_loop_end(pool: Any) -> None:
    """Wait, on the pool's loop, for that loop's end, and close the pool there before it ends.

    ``asyncio.run`` cancels every task as it ends and waits for them; psycopg_pool's worker takes
    that cancellation for a failed connect when it comes mid-connect (a broken or expired
    connection replaced in the background) and waits for its next job: the loop never ended.
    Cancelled here too, this closes the pool: its workers get their stop, its idle connections
    are closed on their loop, and the loop ends. ``pool.close()`` stops at its workers when the
    loop's end cancelled them too (it gathers them): the idle connections it took (``_pool``, the
    field ``_dispose`` reads) are closed here then."""
    try:
        await asyncio.get_running_loop().create_future()  # never set: only the loop's end (or aclose) ends it
    except asyncio.CancelledError:
        idle = list(getattr(pool, "_pool", ()))
        with contextlib.suppress(asyncio.CancelledError):
            await pool.close()
        for connection in idle:
            with contextlib.suppress(Exception):
                await connection.close()
        raise


def _dispose(pool: Any, where: str) -> None:
    """Close an async pool whose event loop has ended, without that loop.

    ``await pool.close()`` cannot run: it wakes the pool's tasks and waiters on their own loop
    ("Event loop is closed"). Nothing needs them: ``asyncio.run`` cancelled the pool's tasks
    as it ended its loop. What is left is the idle connections, each a socket and a server
    session, closed here at the libpq level (``pgconn.finish()``: no loop), and the pool marked
    closed. psycopg_pool keeps these in private fields (``_pool``, ``_closed``, as read
    in psycopg_pool 3.3; the extra allows 3.2 to <4); should they change, the connections are left to the process's exit, said once.
    """
    if pool.closed:
        return
    try:
        idle = list(pool._pool)
        pool._pool.clear()
        for connection in idle:
            connection.pgconn.finish()
        pool._closed = True
    except AttributeError:  # pragma: no cover - a psycopg_pool whose internals moved
        log.warning("the async pool of an ended event loop for the Postgres store at %s could not be closed: its idle "
                    "connections stay until the process exits", where)
