"""Writers of one session in memo mode fold under the session's fold lease: a writer whose
manager has merged another's save folds only while holding the lease, after merging what is
stored (so a fold another writer saved meanwhile is not made again); while another process
holds it, the step waits for it, and past ``fold_wait`` folds without it (the window never
stays over its limit). A single writer never takes the lease."""

from __future__ import annotations

import asyncio
import sys
import threading
import time
from typing import Any

from langchain_core.messages import AIMessage, HumanMessage
import pytest
from stores_util import fresh_tenant

from session_graph import Session
from session_graph.integrations.binding import SessionBinding
from session_graph.stores import SessionManager, SessionStore
from session_graph.stores.base import call_async
from session_graph.stores.lease import CommitLease, lease_tenant

TENANT = "default"  # each test's own (below): Postgres is shared between tests and runs, keys are not


@pytest.fixture(autouse=True)
def _own_tenant(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys.modules[__name__], "TENANT", fresh_tenant())


CONFIG = {"configurable": {"thread_id": "k"}}


def _binding(store: SessionStore, calls: list[list[str]]) -> SessionBinding:
    def fold(memo, messages, attachments, settings):  # type: ignore[no-untyped-def]
        calls.append([m.id for m in messages])
        return {"ids": [*memo.get("ids", []), *(m.id for m in messages)]}

    def factory(key: str) -> Session:
        session = Session(key, memo_update_handler=fold)
        session.set_settings("session.resize.every_n_turns", 0)
        return session.use_memo(messages=6)

    return SessionBinding(manager=SessionManager(store, tenant=TENANT, session_factory=factory))


def _turn(name: str, i: int) -> list:
    return [HumanMessage(content=f"{name} q{i}", id=f"{name}-q{i}"), AIMessage(content=f"{name} a{i}", id=f"{name}-a{i}")]


def _meet(first: SessionBinding, second: SessionBinding) -> None:
    """Each manager merges the other's save once (a step with unsaved changes meets a newer store)."""
    for mine, theirs, name in ((first, second, "x"), (second, first, "y")):
        mine.step(_turn(name, 0)[:1], CONFIG, save=False)  # a change of its own, not saved yet
        assert theirs.manager is not None
        other = theirs.manager.get_or_create("k")
        other.touch()
        theirs.manager.save(other)  # the other writer saves meanwhile
        mine.step(_turn(name, 0)[1:], CONFIG, save=True)  # this step's read merges
        assert mine.manager is not None and mine.manager.merges >= 1


def test_a_single_writer_folds_without_the_lease(store: SessionStore) -> None:
    calls: list[list[str]] = []
    binding = _binding(store, calls)
    for i in range(5):
        binding.step(_turn("a", i), CONFIG, save=True)
    assert calls and binding.manager is not None and binding.manager.merges == 0
    assert store.read(lease_tenant(binding.manager.tenant, "fold"), "k") is None  # no lease written


def test_a_writer_waits_for_the_holder_then_folds_only_what_is_left(store: SessionStore) -> None:
    a_calls: list[list[str]] = []
    b_calls: list[list[str]] = []
    a, b = _binding(store, a_calls), _binding(store, b_calls)
    _meet(a, b)  # both know of another writer now
    assert a.manager is not None and b.manager is not None
    for i in range(1, 4):  # a is over the limit but saves without folding (as if it skipped its resize)
        a.step(_turn("a", i), CONFIG, resize=False, save=True)
    holder = CommitLease(store, b.manager.tenant, "k", purpose="fold")
    assert holder.try_acquire()  # b's process is folding this session

    def holder_folds() -> None:
        b.step(_turn("b", 9), CONFIG, resize=False, save=True)
        session = b.manager.get_or_create("k")  # type: ignore[union-attr]
        session.resize()  # b's fold of everything over the limit
        b.manager.save(session)  # type: ignore[union-attr]
        holder.release()

    timer = threading.Timer(0.3, holder_folds)
    timer.start()
    started = time.monotonic()
    a.step(_turn("a", 4), CONFIG, save=True)  # waits for b's lease, merges b's fold in: nothing left to fold
    timer.join()
    assert time.monotonic() - started >= 0.3
    assert len(b_calls) >= 1
    sent = [i for call in a_calls + b_calls for i in call]
    assert len(sent) == len(set(sent))  # nothing sent to the model twice
    assert store.read(lease_tenant(a.manager.tenant, "fold"), "k").state["lease"] == {}  # type: ignore[union-attr]
    stored = SessionManager(store, tenant=TENANT).get("k")
    assert stored is not None and len(stored.current_chat_history) <= 6


def test_a_holder_slower_than_the_wait_does_not_keep_the_window_over_its_limit(store: SessionStore) -> None:
    a_calls: list[list[str]] = []
    a, b = _binding(store, a_calls), _binding(store, [])
    _meet(a, b)
    assert a.manager is not None
    holder = CommitLease(store, a.manager.tenant, "k", purpose="fold")
    assert holder.try_acquire()  # held, and never released in time
    a.fold_wait = 0.1
    before = len(a_calls)
    for i in range(1, 5):
        a.step(_turn("a", i), CONFIG, save=True)
    assert len(a_calls) > before  # folded without the lease after the wait
    stored = SessionManager(store, tenant=TENANT).get("k")
    assert stored is not None and len(stored.current_chat_history) <= 6
    assert store.read(lease_tenant(a.manager.tenant, "fold"), "k").state["lease"]["owner"] == holder.owner  # type: ignore[union-attr]


def test_the_lease_holder_folds_what_the_store_holds_not_what_it_read(store: SessionStore) -> None:
    a_calls: list[list[str]] = []
    b_calls: list[list[str]] = []
    a, b = _binding(store, a_calls), _binding(store, b_calls)
    _meet(a, b)
    for i in range(6):  # both over the limit in turn: each folds under the lease after merging the other's fold
        a.step(_turn("a", i), CONFIG, save=True)
        b.step(_turn("b", i), CONFIG, save=True)
    sent = [i for call in a_calls + b_calls for i in call]
    assert len(sent) == len(set(sent))  # no message sent to the model twice
    stored = SessionManager(store, tenant=TENANT).get("k")
    assert stored is not None and len(stored.full_chat_history) == 28
    assert stored.memo_for_model["ids"] == sent  # every call's fold kept, in order


def test_the_async_step_folds_under_the_lease_too(store: SessionStore) -> None:
    a_calls: list[list[str]] = []
    a, b = _binding(store, a_calls), _binding(store, [])
    _meet(a, b)
    assert a.manager is not None
    holder = CommitLease(store, a.manager.tenant, "k", purpose="fold")

    async def turns(start: int, count: int) -> None:
        for i in range(start, start + count):
            await a.astep(_turn("a", i), CONFIG, save=True)

    async def scenario() -> Any:  # one loop: a Postgres store's async pool lives on the loop that opened it
        assert a.manager is not None and holder.try_acquire()
        a.fold_wait = 0.1
        before = len(a_calls)
        await turns(1, 4)
        assert len(a_calls) > before  # waited, then folded without it
        held = await call_async(store, "read", lease_tenant(a.manager.tenant, "fold"), "k")
        assert held.state["lease"]["owner"] == holder.owner
        holder.release()
        a.fold_wait = 5.0
        await turns(5, 4)
        assert len(a_calls) > before + 1
        lease = await call_async(store, "read", lease_tenant(a.manager.tenant, "fold"), "k")
        assert lease.state["lease"] == {}  # taken, released
        stored = await SessionManager(store, tenant=TENANT).aget("k")
        await call_async(store, "close")  # the async pool too, on its loop
        return stored

    stored = asyncio.run(scenario())
    assert stored is not None and len(stored.current_chat_history) <= 6
