"""A manager closes its store's connections: ``with SessionManager(...)``, ``close()`` or, after
async use, ``await manager.aclose()`` (a Postgres store's async pool lives on its loop). A pool
left to the garbage collector is closed in one of its own worker threads, which cannot join
itself (an unraisable error in whatever test or request runs then); ``tests/pool_leaks.py``
makes every test that leaves one open fail."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

import pytest
from stores_util import fresh_tenant, make_store

from session_graph.stores import SessionManager


@pytest.mark.parametrize("kind", ["jsonl", "sqlite", "postgres"])
def test_a_manager_used_as_a_context_manager_closes_its_store(kind: str, tmp_path: Path) -> None:
    with SessionManager(make_store(kind, tmp_path), tenant=fresh_tenant()) as manager:
        session = manager.get_or_create("k")
        session.append_message({"role": "user", "content": "hello"})
        manager.save(session)
    if kind == "postgres":
        assert manager.store._pool.closed  # type: ignore[attr-defined]
    with SessionManager(make_store(kind, tmp_path), tenant=manager.tenant) as again:  # nothing lost by closing
        assert [m.text for m in again.get("k").full_chat_history] == ["hello"]


def test_async_use_then_aclose_closes_both_postgres_pools(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    manager = SessionManager(make_store("postgres", tmp_path), tenant=fresh_tenant())

    async def use() -> None:
        session = await manager.aget_or_create("k")
        session.append_message({"role": "user", "content": "hello"})
        await manager.asave(session)
        await manager.aclose()

    asyncio.run(use())
    store = manager.store
    assert store._pool.closed and store._apool.closed  # type: ignore[attr-defined]


def test_close_after_async_use_says_how_to_close_the_async_pool(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    manager = SessionManager(make_store("postgres", tmp_path), tenant=fresh_tenant())
    apool = None

    async def use() -> None:
        nonlocal apool
        session = await manager.aget_or_create("k")
        session.append_message({"role": "user", "content": "hello"})
        await manager.asave(session)
        apool = manager.store._apool  # type: ignore[attr-defined]
        with caplog.at_level(logging.WARNING, logger="session_graph.stores.postgres"):
            manager.close()  # the sync close, inside the loop: the async pool is still open
        assert "await store.aclose()" in caplog.text
        await apool.close()  # as the warning says: on its own loop

    asyncio.run(use())
    assert apool is not None and apool.closed


@pytest.mark.parametrize("kind", ["jsonl", "sqlite", "postgres"])
def test_a_tenant_manager_closed_leaves_the_shared_store_open(kind: str, tmp_path: Path) -> None:
    """``for_tenant`` shares its parent's store: ``with manager.for_tenant(t)`` per request must not
    close the store under the parent (a closed SQLite connection or Postgres pool for every later request)."""
    with SessionManager(make_store(kind, tmp_path), tenant=fresh_tenant()) as root:
        with root.for_tenant(fresh_tenant()) as tenant:
            session = tenant.get_or_create("k")
            session.append_message({"role": "user", "content": "for the tenant"})
            tenant.save(session)
        tenant.close()  # twice, explicitly: still the parent's store
        session = root.get_or_create("k")
        session.append_message({"role": "user", "content": "for the root"})
        root.save(session)
        assert [m.text for m in root.get("k").full_chat_history] == ["for the root"]
    if kind == "postgres":
        assert root.store._pool.closed  # type: ignore[attr-defined]  # the owner closed it


def test_async_use_after_aclose_is_a_store_error_as_in_sync(tmp_path: Path) -> None:
    """The async twins after ``aclose`` fail as the sync methods after ``close`` do: a StoreError
    naming the store, not psycopg_pool's PoolClosed escaping from the async pool's reopening."""
    from session_graph.errors import StoreError

    manager = SessionManager(make_store("postgres", tmp_path), tenant=fresh_tenant())

    async def use() -> None:
        session = await manager.aget_or_create("k")
        session.append_message({"role": "user", "content": "hello"})
        await manager.asave(session)
        await manager.aclose()
        await manager.aclose()  # twice: nothing more to close
        with pytest.raises(StoreError, match="closed"):
            await manager.aget("other")

    asyncio.run(use())
    with pytest.raises(StoreError, match="closed"):
        manager.get("other")
