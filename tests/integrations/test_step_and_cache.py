"""Manager-owned step locks (rt25) serialise the steps of one key; steps of other keys run at
the same time in other threads over the same manager and its LRU cache. A step's session must
stay in the cache while the step uses it: evicted under it (another user's step remembered its
own session), the step failed on the cache (``KeyError``) or its save was refused as a second
object of a stored session."""

from __future__ import annotations

from pathlib import Path
import threading

from langchain_core.messages import AIMessage, HumanMessage
import pytest

from session_graph.integrations.binding import SessionBinding
from session_graph.stores import JsonlStore, SessionManager, SqliteStore


def _manager(tmp_path: Path, kind: str) -> SessionManager:
    store = JsonlStore(tmp_path / "j", fsync=False) if kind == "jsonl" else SqliteStore(tmp_path / "s.db")
    return SessionManager(store, cache_size=1)


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
    stored = SessionManager(manager.store).get("k")
    assert stored is not None and [m.id for m in stored.full_chat_history] == ["q0", "a0", "q1", "a1"]
    assert SessionManager(manager.store).get("u1") is not None
