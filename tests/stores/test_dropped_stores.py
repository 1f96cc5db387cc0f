"""Stores and managers close on the way out of a ``with`` block (sync and async), the common path
the README shows. A store dropped without ``close()`` frees its descriptors when the garbage
collector frees it (a store and its search index refer to each other), never later."""

from __future__ import annotations

import asyncio
import gc
import os
from pathlib import Path
from typing import Any

import pytest

from session_graph import JsonlStore, SessionManager, SqliteStore

pytestmark = pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="counts descriptors in /proc")

STORES = {"jsonl": lambda root: JsonlStore(root), "sqlite": lambda root: SqliteStore(root / "s.db")}


def open_descriptors() -> int:
    return len(os.listdir("/proc/self/fd"))


def held_under(root: Path) -> list[str]:
    """The files under ``root`` this process holds open (a leak of the stores made there, whatever
    an earlier test's background threads close meanwhile)."""
    held = []
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue  # closed since the listing
        if target.startswith(str(root)):
            held.append(target)
    return held


def one_turn(manager: SessionManager, key: str) -> None:
    session = manager.get_or_create(key)
    session.append_message({"role": "user", "content": "hi"})
    manager.save(session)
    manager.search("hi")


@pytest.mark.parametrize("kind", sorted(STORES))
def test_dropped_managers_hold_no_descriptor_after_a_collection(tmp_path: Path, kind: str) -> None:
    make = STORES[kind]
    one_turn(SessionManager(make(tmp_path)), "warm")  # imports and caches of the first use
    gc.collect()
    before = open_descriptors()
    for index in range(40):
        one_turn(SessionManager(make(tmp_path)), f"k{index}")  # dropped at once, never closed
    gc.collect()
    # none of the 40 stores' files is held; the count never grows (it may fall: an earlier test's
    # pool threads can close their sockets meanwhile, as one CI run saw: 21 before, 17 after)
    assert held_under(tmp_path) == [] and open_descriptors() <= before


@pytest.mark.parametrize("kind", sorted(STORES))
def test_with_closes_the_store_and_the_manager(tmp_path: Path, kind: str) -> None:
    make = STORES[kind]
    gc.collect()
    before = open_descriptors()
    kept: list[Any] = []
    with SessionManager(make(tmp_path)) as manager:
        one_turn(manager, "k")
        kept.append(manager)  # still referenced after the block: closed all the same
    assert open_descriptors() == before
    with make(tmp_path) as store:
        kept.append(store)
        assert store.read("default", "k") is not None
    assert open_descriptors() == before

    async def main() -> None:
        async with make(tmp_path) as store:
            kept.append(store)
            assert await store.aread("default", "k") is not None

    asyncio.run(main())
    assert open_descriptors() == before and len(kept) == 3


@pytest.mark.parametrize("kind", sorted(STORES))
def test_async_with_closes_the_manager(tmp_path: Path, kind: str) -> None:
    """``async with SessionManager(...)`` (README: ``async with`` too) closes its store like ``with``."""
    make = STORES[kind]
    gc.collect()
    before = open_descriptors()

    async def main() -> SessionManager:
        async with SessionManager(make(tmp_path)) as manager:
            session = await manager.aget_or_create("k")
            session.append_message({"role": "user", "content": "hi"})
            await manager.asave(session)
        return manager

    kept = asyncio.run(main())
    assert open_descriptors() == before
    with SessionManager(make(tmp_path)) as again:
        assert again.get("k") is not None and kept is not again
