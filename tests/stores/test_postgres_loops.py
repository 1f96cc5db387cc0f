"""A Postgres store used under one event loop, then under another (``asyncio.run`` twice: a
notebook, a CLI) opens an async pool on each loop; the pool of a loop that has ended is closed
without that loop, its connections too.

psycopg's async pool is bound to the loop that opened it: its tasks ended with that loop, and
closing it (``aclose``) on another loop failed with "Event loop is closed", leaving its
connections open on the server. Each test gives its store a DSN with an ``application_name``
of its own, so the server says how many connections the store still holds.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any
import uuid

import pytest
from stores_util import fresh_tenant, postgres_dsn

from session_graph.stores import PostgresStore, SessionManager


def _named_dsn() -> tuple[str, str]:
    name = f"sg-loops-{uuid.uuid4().hex[:10]}"
    dsn = postgres_dsn()
    return f"{dsn}{'&' if '?' in dsn else '?'}application_name={name}", name


def _connections(name: str) -> int:
    """Connections the server holds for ``name`` (a closed one may take a moment to leave); asked
    on the plain DSN, so the probe is not one of them."""
    import psycopg

    deadline = time.monotonic() + 10
    with psycopg.connect(postgres_dsn(), autocommit=True) as probe:
        while True:
            count = probe.execute("SELECT count(*) FROM pg_stat_activity WHERE application_name = %s", (name,)).fetchone()
            assert count is not None
            if count[0] == 0 or time.monotonic() > deadline:
                return int(count[0])
            time.sleep(0.05)


def test_a_second_asyncio_run_gets_a_pool_of_its_own_and_closes_the_first() -> None:
    dsn, name = _named_dsn()
    manager = SessionManager(PostgresStore(dsn), tenant=fresh_tenant())
    pools: list[Any] = []

    async def turn(text: str) -> list[str]:
        session = await manager.aget_or_create("k")
        session.append_message({"role": "user", "content": text})
        await manager.asave(session)
        pools.append(manager.store._apool)  # type: ignore[attr-defined]
        return [m.text for m in (await manager.aget("k")).full_chat_history]

    assert asyncio.run(turn("first run")) == ["first run"]
    assert asyncio.run(turn("second run")) == ["first run", "second run"]  # another loop: the store still works
    first, second = pools
    assert first is not second and first.closed and second.closed  # each closed on its loop as that loop ended

    async def close() -> None:
        await manager.aclose()

    asyncio.run(close())  # a third loop: closes what the second left, without it
    assert second.closed and manager.store._pool.closed  # type: ignore[attr-defined]
    assert _connections(name) == 0  # nothing left open on the server


def test_close_after_the_loops_ended_closes_their_pools() -> None:
    """The sync ``close`` after ``asyncio.run``: the pool's loop has ended, so no ``aclose`` can run
    on it any more; ``close`` closes it (it used to only warn, and leave the connections open)."""
    dsn, name = _named_dsn()
    store = PostgresStore(dsn)
    tenant = fresh_tenant()

    async def use() -> None:
        await store.alist(tenant)

    asyncio.run(use())
    asyncio.run(use())
    store.close()
    assert store._apool.closed and not store._apools  # type: ignore[attr-defined]
    assert _connections(name) == 0


def test_async_use_after_aclose_fails_on_any_loop() -> None:
    from session_graph.errors import StoreError

    store = PostgresStore(_named_dsn()[0])
    tenant = fresh_tenant()

    async def use_then_close() -> None:
        await store.alist(tenant)
        await store.aclose()

    asyncio.run(use_then_close())

    async def use() -> None:
        await store.alist(tenant)

    with pytest.raises(StoreError, match="closed"):
        asyncio.run(use())  # a new loop does not reopen a closed store


_BURSTS = """
import asyncio, sys
from session_graph.stores import PostgresStore

async def burst(store):
    await asyncio.gather(*(store.alist("t-exit") for _ in range(8)))  # more than the pool's 4: it would grow

for _ in range(5):
    store = PostgresStore(sys.argv[1])
    asyncio.run(burst(store))  # ends with no aclose(): the loop's end must not wait on the pool
    asyncio.run(burst(store))
    store.close()
print("done")
"""


def test_a_loop_that_ends_with_the_pool_open_does_not_hang() -> None:
    """``asyncio.run`` ending while the pool grew in the background waited forever for psycopg_pool's
    connecting task (it takes the cancellation for a failed attempt); the pool is opened full."""
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", _BURSTS, postgres_dsn()], capture_output=True, text=True, timeout=120,
                          check=False)
    assert done.returncode == 0 and done.stdout.strip() == "done", done.stderr[-2000:]
