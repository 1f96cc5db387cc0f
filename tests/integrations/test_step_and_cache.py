"""Manager-owned step locks (rt25) serialise the steps of one key; steps of other keys run at
the same time in other threads over the same manager and its LRU cache. A step's session must
stay in the cache while the step uses it: evicted under it (another user's step remembered its
own session), the step failed on the cache (``KeyError``) or its save was refused as a second
object of a stored session."""

from __future__ import annotations

import asyncio
from pathlib import Path
import sys
import threading

from langchain_core.messages import AIMessage, HumanMessage
import pytest
from stores_util import fresh_tenant

from session_graph import Session
from session_graph.integrations.binding import SessionBinding
from session_graph.stores import JsonlStore, SessionManager, SqliteStore

TENANT = "default"  # each test's own (below): Postgres is shared between tests and runs, keys are not


@pytest.fixture(autouse=True)
def _own_tenant(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys.modules[__name__], "TENANT", fresh_tenant())


def _manager(tmp_path: Path, kind: str) -> SessionManager:
    store = JsonlStore(tmp_path / "j", fsync=False) if kind == "jsonl" else SqliteStore(tmp_path / "s.db")
    return SessionManager(store, tenant=TENANT, cache_size=1)


def _other_user(manager: SessionManager, name: str) -> None:
    """Another thread's step on another key: its session is remembered, the oldest saved one evicted."""
    session = manager.get_or_create(name)
    session.append_message(HumanMessage(content=f"{name} asks", id=f"{name}-q"))
    manager.save(session)


@pytest.mark.parametrize("kind", ["jsonl", "sqlite"])
@pytest.mark.parametrize("when", ["version", "record"])
def test_another_keys_step_never_evicts_the_session_a_step_is_using(kind: str, when: str, tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    manager = _manager(tmp_path, kind)
    binding = SessionBinding(manager=manager)
    config = {"configurable": {"thread_id": "k"}}
    binding.step([HumanMessage(content="q0", id="q0"), AIMessage(content="a0", id="a0")], config, save=True)
    fired: list[str] = []

    def other_runs(key: str) -> None:
        if key == "k" and not fired and threading.current_thread().name == "step":
            fired.append(key)
            _other_user(manager, "u1")

    if when == "version":  # while the step asks the store whether its cached session is current
        real = type(manager.store).version

        def version(self, tenant, key):  # type: ignore[no-untyped-def]
            other_runs(key)
            return real(self, tenant, key)

        monkeypatch.setattr(type(manager.store), "version", version)
    else:  # between the step's look-up and its save
        record = SessionBinding.record

        def recording(session, messages):  # type: ignore[no-untyped-def]
            other_runs(session.id)
            return record(session, messages)

        monkeypatch.setattr(binding, "record", recording)
    errors: list[BaseException] = []

    def step() -> None:
        try:
            binding.step([HumanMessage(content="q1", id="q1"), AIMessage(content="a1", id="a1")], config, save=True)
        except BaseException as error:  # reported below
            errors.append(error)

    worker = threading.Thread(target=step, name="step")
    worker.start()
    worker.join(30)
    assert fired and not errors, errors
    stored = SessionManager(manager.store, tenant=manager.tenant).get("k")
    assert stored is not None and [m.id for m in stored.full_chat_history] == ["q0", "a0", "q1", "a1"]
    assert SessionManager(manager.store, tenant=manager.tenant).get("u1") is not None


@pytest.mark.parametrize("kind", ["jsonl", "sqlite"])
def test_agents_over_two_managers_in_threads_lose_nothing_and_fold_each_message_once(kind: str, tmp_path: Path) -> None:
    """Three writers of one key at once in memo mode: two agents over one manager (its step
    locks, its small cache shared with other users' keys) and one over another manager of the
    same store (another process: merges, then folds under the fold lease). Whatever the
    interleaving, every message is stored once and in each writer's order, the memo folds each
    message once, and each manager's window is a fresh load's."""
    store = JsonlStore(tmp_path / "j", fsync=False) if kind == "jsonl" else SqliteStore(tmp_path / "s.db")

    def fold(memo, messages, attachments, settings):  # type: ignore[no-untyped-def]
        return {"ids": [*memo.get("ids", []), *(m.id for m in messages)]}

    def factory(key: str) -> Session:
        session = Session(key, memo_update_handler=fold)
        session.set_settings("session.resize.every_n_turns", 0)
        return session.use_memo(messages=6)

    first, second = (SessionManager(store, tenant=TENANT, session_factory=factory, cache_size=1) for _ in range(2))
    writers = {"a": SessionBinding(manager=first), "b": SessionBinding(manager=second), "c": SessionBinding(manager=first)}
    config, turns, errors = {"configurable": {"thread_id": "k"}}, 8, []

    def run(name: str) -> None:
        binding = writers[name]
        try:
            for i in range(turns):
                binding.step([HumanMessage(content=f"{name} q{i}", id=f"{name}-q{i}")], config, save=True)
                binding.step([AIMessage(content=f"{name} a{i}", id=f"{name}-a{i}")], config, save=True, resize=False)
                if i % 3 == 0:  # another user's key through the same manager: its cache evicts
                    binding.step([HumanMessage(content="hi", id=f"{name}-o{i}")], {"configurable": {"thread_id": f"u-{name}"}}, save=True)
        except BaseException as error:  # reported below
            errors.append(error)

    threads = [threading.Thread(target=run, args=(name,)) for name in writers]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    assert not any(thread.is_alive() for thread in threads) and not errors, errors
    stored = SessionManager(store, tenant=TENANT).get("k")
    assert stored is not None
    ids = [m.id for m in stored.full_chat_history]
    assert len(ids) == len(set(ids)) == 3 * 2 * turns
    for name in writers:
        assert [i for i in ids if i.startswith(f"{name}-")] == [f"{name}-{t}{i}" for i in range(turns) for t in "qa"]
    memo = stored.memo.get("ids", [])
    assert len(memo) == len(set(memo)) and {*ids[: stored.state.memo_cursor], *stored.state.memo_ahead} <= set(memo)
    window = [m.id for m in stored.current_chat_history]
    for manager in (first, second):
        assert [m.id for m in manager.get_or_create("k").current_chat_history] == window


def test_an_async_step_waits_for_a_sync_step_on_the_same_key(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A thread's ``step`` and an event loop's ``astep`` on one key of one manager (an app
    serving ``invoke`` and ``ainvoke``): the steps take turns, else both record into and save one
    session at once and a message is lost or stored twice."""
    manager = SessionManager(JsonlStore(tmp_path / "j", fsync=False))
    binding = SessionBinding(manager=manager)
    config = {"configurable": {"thread_id": "k"}}
    inside, go = threading.Event(), threading.Event()
    record = SessionBinding.record

    def held(session, messages):  # type: ignore[no-untyped-def]
        if threading.current_thread().name == "sync-step":
            inside.set()
            go.wait(10)
        return record(session, messages)

    monkeypatch.setattr(binding, "record", held)
    worker = threading.Thread(target=binding.step, args=([HumanMessage(content="s", id="s1")], config),
                              kwargs={"save": True}, name="sync-step")
    worker.start()
    assert inside.wait(10)

    async def run() -> bool:
        task = asyncio.create_task(binding.astep([HumanMessage(content="x", id="x1")], config, save=True))
        await asyncio.sleep(0.3)
        overlapped = task.done()
        go.set()
        await task
        return overlapped

    overlapped = asyncio.run(run())
    worker.join(10)
    assert not overlapped  # the async step waited for the sync one
    stored = SessionManager(manager.store, tenant=manager.tenant).get("k")
    assert stored is not None and sorted(m.id for m in stored.full_chat_history) == ["s1", "x1"]


@pytest.mark.parametrize("driver", ["sync", "async"])
def test_a_step_that_fails_leaves_its_key_evictable(driver: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The step holds its key in the cache (``hold``/``release``, no context manager): a step that
    raises must release it, or the key stays pinned (never evicted) for the process's life."""
    manager = _manager(tmp_path, "jsonl")
    binding = SessionBinding(manager=manager)
    config = {"configurable": {"thread_id": "a"}}
    binding.step([HumanMessage(content="hi", id="a-1")], config, resize=False, save=True)  # stored: evictable

    def failing(self: Session, force: object = False) -> None:
        raise RuntimeError("policy failed (simulated)")

    monkeypatch.setattr(Session, "judge_resize", failing)
    monkeypatch.setattr(Session, "async_judge_resize", failing)
    with pytest.raises(RuntimeError, match="simulated"):
        if driver == "sync":
            binding.step([], config)
        else:
            asyncio.run(binding.astep([], config))
    _other_user(manager, "b")  # remembered: the oldest saved entry not held goes
    assert "a" not in manager.cache and "b" in manager.cache
