"""The store conformance suite, part two: the ``update`` primitive, on JSONL, SQLite and Postgres.

``update(tenant, key, fn, since=...)`` runs ``fn`` under the store's writer lock on what is
stored and applies the ``StoreChange`` it returns atomically; everything else a store writes
(``write``, a manager's save, a merge) is one such function.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
import threading
import time
from typing import Any

from langchain_core.messages import HumanMessage
import pytest
from stores_util import fresh_tenant, make_store

from session_graph import StoreConflictError
from session_graph.stores import SessionStore
from session_graph.stores.base import StoreChange, StoredSession, call_async
from session_graph.stores.codec import message_record


def record(i: int) -> dict[str, Any]:
    return message_record(HumanMessage(content=f"m{i}", id=f"m{i}"), f"2026-01-01T00:00:{i:02d}Z")


def state(**fields: Any) -> dict[str, Any]:
    return {"created_at": "2026-01-01T00:00:00Z", "updated_at": "2026-01-01T00:00:00Z", **fields}


def test_the_function_sees_what_is_stored_and_its_change_is_applied(store: SessionStore) -> None:
    tenant = fresh_tenant()
    seen: list[StoredSession] = []

    def first(stored: StoredSession) -> StoreChange:
        seen.append(stored)
        return StoreChange(state(n=1), [record(0), record(1)])

    assert store.update(tenant, "k", first) == 1
    assert seen[0].state is None and seen[0].version == 0 and seen[0].message_count == 0 and seen[0].records == []

    def second(stored: StoredSession) -> StoreChange:
        seen.append(stored)
        return StoreChange(state(n=stored.state["n"] + 1), [record(2)])

    assert store.update(tenant, "k", second) == 2
    assert seen[1].version == 1 and seen[1].message_count == 2 and seen[1].state["n"] == 1
    assert seen[1].records == []  # asked for none
    snapshot = store.read(tenant, "k")
    assert snapshot.version == 2 and snapshot.state["n"] == 2 and snapshot.state["message_count"] == 3
    assert [r["seq"] for r in snapshot.records] == [0, 1, 2]
    assert [r["id"] for r in snapshot.records] == ["m0", "m1", "m2"]


def test_since_hands_over_only_the_records_the_caller_lacks(store: SessionStore) -> None:
    tenant = fresh_tenant()
    store.update(tenant, "k", lambda stored: StoreChange(state(), [record(i) for i in range(5)]))
    seen: list[StoredSession] = []

    def look(stored: StoredSession) -> None:
        seen.append(stored)

    store.update(tenant, "k", look, since=3)
    store.update(tenant, "k", look, since=5)  # holds everything: nothing read
    store.update(tenant, "k", look, since=0)
    assert [[r["id"] for r in s.records] for s in seen] == [["m3", "m4"], [], [f"m{i}" for i in range(5)]]
    assert [r["seq"] for r in seen[0].records] == [3, 4]


def test_returning_none_or_raising_writes_nothing(store: SessionStore, tmp_path: Path) -> None:
    tenant = fresh_tenant()
    assert store.update(tenant, "new", lambda stored: None) == 0
    assert store.version(tenant, "new") is None and store.list(tenant) == []  # no placeholder left behind
    store.update(tenant, "k", lambda stored: StoreChange(state(n=1), [record(0)]))
    before = store.read(tenant, "k")

    class Refused(Exception):
        pass

    def refuse(stored: StoredSession) -> StoreChange:
        raise Refused("no")

    with pytest.raises(Refused):  # the caller's own error, unwrapped
        store.update(tenant, "k", refuse, since=0)
    with pytest.raises(Refused):
        store.update(tenant, "new", refuse)
    assert store.update(tenant, "k", lambda stored: None) == 1
    assert store.read(tenant, "k") == before
    assert store.version(tenant, "new") is None


@pytest.mark.parametrize("reply", [("records", "state"), {"state": {}}, StoreChange(state=[1, 2])])  # type: ignore[arg-type]
def test_a_function_that_returns_something_else_is_a_clear_error(store: SessionStore, reply: Any) -> None:
    tenant = fresh_tenant()
    store.update(tenant, "k", lambda stored: StoreChange(state(n=1), [record(0)]))
    before = store.read(tenant, "k")
    with pytest.raises(TypeError, match="StoreChange"):
        store.update(tenant, "k", lambda stored: reply)
    assert store.read(tenant, "k") == before


def test_a_reset_drops_the_stored_messages_first(store: SessionStore) -> None:
    tenant = fresh_tenant()
    store.update(tenant, "k", lambda stored: StoreChange(state(), [record(i) for i in range(3)]))
    store.update(tenant, "k", lambda stored: StoreChange(state(), [record(9)], reset=True))
    snapshot = store.read(tenant, "k")
    assert [(r["seq"], r["id"]) for r in snapshot.records] == [(0, "m9")]
    assert snapshot.state["message_count"] == 1


def test_write_is_an_update_with_a_version_check(store: SessionStore) -> None:
    tenant = fresh_tenant()
    assert store.write(tenant, "k", [record(0)], state(), expect_version=0) == 1
    with pytest.raises(StoreConflictError, match="stored version 1, expected 0"):
        store.write(tenant, "k", [record(1)], state(), expect_version=0)
    assert store.write(tenant, "k", [record(1)], state(), expect_version=1) == 2
    assert [r["id"] for r in store.read(tenant, "k").records] == ["m0", "m1"]


def test_racing_read_modify_writes_never_lose_an_increment(kind: str, tmp_path: Path) -> None:
    """Four writers, each with its own store object (its own connection or file handles), each
    add one to a counter 25 times; the function dawdles to widen every race window."""
    tenant, writers, rounds = fresh_tenant(), 4, 25
    stores = [make_store(kind, tmp_path) for _ in range(writers)]
    errors: list[BaseException] = []

    def bump(stored: StoredSession) -> StoreChange:
        count = (stored.state or {}).get("count", 0)
        time.sleep(0.001)  # another writer would slip in here without the lock
        return StoreChange(state(count=count + 1), [record(count % 60)])

    def writer(own: SessionStore) -> None:
        try:
            for _ in range(rounds):
                own.update(tenant, "counter", bump)
        except BaseException as error:  # reported below
            errors.append(error)

    threads = [threading.Thread(target=writer, args=(own,)) for own in stores]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors
    snapshot = stores[0].read(tenant, "counter")
    for own in stores:
        own.close()
    assert snapshot.state["count"] == writers * rounds == snapshot.version
    assert [r["seq"] for r in snapshot.records] == list(range(writers * rounds))


def test_the_async_twin_runs_the_same_update(store: SessionStore) -> None:
    tenant = fresh_tenant()

    async def scenario() -> tuple[list[int], Any]:
        versions = []
        for i in range(3):
            versions.append(await call_async(store, "update", tenant, "k",
                                             lambda stored, i=i: StoreChange(state(n=i), [record(i)]), since=0))
        snapshot = await call_async(store, "read", tenant, "k")
        await call_async(store, "close")  # its async pool too, on this loop (close() after the loop cannot)
        return versions, snapshot

    versions, snapshot = asyncio.run(scenario())
    assert versions == [1, 2, 3]
    assert snapshot.state["n"] == 2 and [r["id"] for r in snapshot.records] == ["m0", "m1", "m2"]


def test_a_store_without_update_is_refused_by_name(tmp_path: Path) -> None:
    from session_graph import ConfigurationError, SessionManager

    class OldStore:  # the protocol before update: write, read... but no update
        def write(self, *args: Any, **kwargs: Any) -> int:
            return 1

    with pytest.raises(ConfigurationError, match="lacks update, read, version, delete, list, search, close"):
        SessionManager(OldStore())  # type: ignore[arg-type]


def test_a_user_store_gets_write_and_async_twins_from_store_base(tmp_path: Path) -> None:
    from session_graph import SessionManager, StoreBase
    from session_graph.stores import JsonlStore

    inner = JsonlStore(tmp_path / "inner")
    updates: list[str] = []

    class Mine(StoreBase):  # only the primitive and the reads; write and a* come from StoreBase
        def update(self, tenant: str, key: str, fn: Any, *, since: int | None = None) -> int:
            updates.append(key)
            return inner.update(tenant, key, fn, since=since)

        def __getattr__(self, name: str) -> Any:
            return getattr(inner, name)

    store = Mine()
    manager = SessionManager(store, tenant="t")
    session = manager.get_or_create("k")
    session.append_message({"role": "user", "content": "hi"})
    manager.save(session)
    assert store.write("t", "k", [record(1)], state(), expect_version=1) == 2
    assert asyncio.run(store.awrite("t", "k", [record(2)], state(), expect_version=2)) == 3
    assert updates == ["k", "k", "k"] and len(inner.read("t", "k").records) == 3
