"""The async pool when the server refuses connections (a role's or the server's connection limit
nearly reached): the pool opens the connections it uses, so a store with fewer free connections
than ``max_size`` still serves its async twins.

Opened full (``max_size`` connections per event loop, waited for), a failed open failed the
call, and closed the pool for good (psycopg_pool cannot reopen one: "cannot be reused" on every
later call on that loop, a server's one loop: the process's life).
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
import contextlib
import time
import uuid

import pytest
from stores_util import fresh_tenant, postgres_dsn

from session_graph.stores import PostgresStore


@pytest.fixture
def limited_role() -> Iterator[tuple[str, str]]:
    """A login role allowed 5 connections, owning a database of its own (the sync pool's 1 and the async pool's 4), its DSN."""
    import psycopg
    from psycopg.conninfo import make_conninfo

    role = f"sg_limited_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(postgres_dsn(), autocommit=True) as admin:
        admin.execute(f'CREATE ROLE "{role}" LOGIN CONNECTION LIMIT 8')  # (a superuser has no limit)
        admin.execute(f'CREATE DATABASE "{role}" OWNER "{role}"')  # its tables its own
    try:
        yield make_conninfo(postgres_dsn(), user=role, dbname=role), role
    finally:
        with psycopg.connect(postgres_dsn(), autocommit=True) as admin:
            admin.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = %s", (role,))
            admin.execute(f'DROP DATABASE IF EXISTS "{role}" WITH (FORCE)')
            admin.execute(f'DROP ROLE IF EXISTS "{role}"')


def _until_the_server_counts(role: str, most: int) -> None:
    """Wait until the server holds at most ``most`` connections of ``role`` (a closed one leaves its
    backend a moment later)."""
    import psycopg

    deadline = time.monotonic() + 10
    with psycopg.connect(postgres_dsn(), autocommit=True) as probe:
        while True:
            row = probe.execute("SELECT count(*) FROM pg_stat_activity WHERE usename = %s", (role,)).fetchone()
            assert row is not None
            if row[0] <= most:
                return
            assert time.monotonic() < deadline, f"the server still holds {row[0]} connections of {role}"
            time.sleep(0.02)


def test_a_server_with_fewer_free_connections_than_max_size_serves_the_async_twins(limited_role: tuple[str, str]) -> None:
    """An async pool opens the connections it uses, not ``max_size`` per event loop: opened full,
    a store whose server (or role) had 2 connections free failed every async call."""
    import psycopg

    dsn, role = limited_role
    store = PostgresStore(dsn, connect_timeout=1)
    tenant = fresh_tenant()

    async def run() -> None:
        others: list[psycopg.Connection] = []
        try:
            with contextlib.suppress(psycopg.OperationalError):  # other clients take what the role has left
                while True:
                    others.append(psycopg.connect(dsn))
            for other in others[:2]:  # then give 2 back: fewer free than max_size=4
                other.close()
            _until_the_server_counts(role, 6)
            assert await store.alist(tenant) == []
        finally:
            for other in others:
                other.close()
            await store.aclose()

    asyncio.run(run())
