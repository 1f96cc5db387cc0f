"""A lite prune before a later model call of a turn waits for the turn's next write (the pruned
messages are stored already; the window is derived state): a one-tool turn writes exactly twice
even when every model call prunes. Anything else a resize does is written at once."""

from __future__ import annotations

import asyncio
from pathlib import Path

from agents_util import lookup, model
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage
from save_util import counted_writes

from session_graph import Session, SessionManager
from session_graph.integrations import SessionMiddleware
from session_graph.integrations.pruned import before_resize, only_pruned


def counted_resizes(monkeypatch) -> list[int]:
    resizes: list[int] = []
    real = Session.resize

    def resize(self, force=False):
        resizes.append(len(self.current_chat_history))
        return real(self, force)

    monkeypatch.setattr(Session, "resize", resize)
    return resizes


def test_a_one_tool_turn_that_prunes_before_each_model_call_writes_twice(tmp_path: Path, monkeypatch) -> None:
    manager = SessionManager(tmp_path)
    manager.session_factory = lambda key: Session(key).use_lite(messages=2)
    writes, resizes = counted_writes(manager), counted_resizes(monkeypatch)
    agent = create_agent(model(), tools=[lookup], middleware=[SessionMiddleware(manager=manager)])
    config = {"configurable": {"thread_id": "t1"}}
    for turn in range(5):
        del writes[:], resizes[:]
        agent.invoke({"messages": [HumanMessage(content=f"question {turn}")]}, config)
        if turn:
            assert len(resizes) == 2, f"turn {turn}: {resizes}"  # a prune before both model calls
        assert writes == [True, False], f"turn {turn}: {writes}"
        live = manager.get("t1")
        stored = SessionManager(tmp_path).get("t1")  # another process: the turn's last write carried the prune
        assert [m.id for m in stored.full_chat_history] == [m.id for m in live.full_chat_history]
        assert [m.id for m in stored.current_chat_history] == [m.id for m in live.current_chat_history]
        assert stored.memo == live.memo
        assert [r.get("type") for r in stored.trace.records()] == [r.get("type") for r in live.trace.records()]


def test_a_crash_before_the_turns_last_write_keeps_every_stored_message(tmp_path: Path) -> None:
    """The skipped write held only derived state: the stored window is the larger one it was,
    its messages all stored, and the next step prunes it again."""
    manager = SessionManager(tmp_path)
    manager.session_factory = lambda key: Session(key).use_lite(messages=2)
    binding = SessionMiddleware(manager=manager).binding
    config = {"configurable": {"thread_id": "t1"}}
    turn = [HumanMessage(content="q", id="h1"), AIMessage(content="a", id="a1"), HumanMessage(content="q2", id="h2")]
    first = [m.id for m in binding.step(turn, config, save=True).current_chat_history]  # written
    held = [*turn, AIMessage(content="a2", id="a2"), HumanMessage(content="q3", id="h3")]
    session = binding.step(held, config, save=len(held))  # prunes; the caller's state holds all of it
    assert len(session.current_chat_history) <= 2 and session.current_chat_history[-1].id == "h3"  # pruned
    stored = SessionManager(tmp_path).get("t1")  # the process died here
    assert [m.id for m in stored.full_chat_history] == ["h1", "a1", "h2"]
    assert [m.id for m in stored.current_chat_history] == first != [m.id for m in session.current_chat_history]
    again = SessionMiddleware(manager=SessionManager(tmp_path)).binding
    again.manager.session_factory = manager.session_factory
    resumed = again.step(held, config, save=True)  # the agent's checkpoint hands the messages again
    assert [m.id for m in resumed.full_chat_history] == ["h1", "a1", "h2", "a2", "h3"]
    assert len(resumed.current_chat_history) <= 2
    assert [m.id for m in SessionManager(tmp_path).get("t1").current_chat_history] == [m.id for m in resumed.current_chat_history]


def test_only_a_prune_counts_as_one() -> None:
    session = Session("s")
    for i in range(6):
        session.append_message({"role": "user" if i % 2 == 0 else "assistant", "content": f"m{i}"})
    state = session.state
    before = before_resize(session)
    assert only_pruned(session, before)  # nothing changed
    state.current_chat_history = state.current_chat_history[2:]
    state.memo["last_resize"] = {"type": "lite"}
    assert only_pruned(session, before)  # the oldest dropped, the note rewritten
    state.current_chat_history = [SystemMessage(content="a handler's summary"), *state.current_chat_history]
    assert not only_pruned(session, before)  # a message of its own in the window
    state.current_chat_history = state.current_chat_history[1:]
    state.memo["facts"] = ["folded"]
    assert not only_pruned(session, before)  # the memo's content moved
    del state.memo["facts"]
    state.memo_cursor = 2
    assert not only_pruned(session, before)  # a fold's cursor
    state.memo_cursor = 0
    state.current_chat_history = [*state.current_chat_history[:-1], AIMessage(content="other")]
    assert not only_pruned(session, before)  # not the same messages


def test_async_turns_that_prune_write_twice_too(tmp_path: Path, monkeypatch) -> None:
    manager = SessionManager(tmp_path)
    manager.session_factory = lambda key: Session(key).use_lite(messages=2)
    writes: list[bool] = []
    real = manager.asave

    async def counted(session, *, durable: bool = True) -> None:
        before = manager.store.version(manager.tenant, session.id)
        await real(session, durable=durable)
        if manager.store.version(manager.tenant, session.id) != before:
            writes.append(durable)

    manager.asave = counted  # type: ignore[method-assign]
    resizes = counted_resizes(monkeypatch)
    real_async = Session.async_resize

    async def async_resize(self, force=False):
        resizes.append(len(self.current_chat_history))
        return await real_async(self, force)

    monkeypatch.setattr(Session, "async_resize", async_resize)
    agent = create_agent(model(), tools=[lookup], middleware=[SessionMiddleware(manager=manager)])
    config = {"configurable": {"thread_id": "t1"}}
    for turn in range(4):
        del writes[:], resizes[:]
        asyncio.run(agent.ainvoke({"messages": [HumanMessage(content=f"question {turn}")]}, config))
        if turn:
            assert len(resizes) == 2, f"turn {turn}: {resizes}"
        assert writes == [True, False], f"turn {turn}: {writes}"
    live = manager.get("t1")
    stored = SessionManager(tmp_path).get("t1")
    assert [m.id for m in stored.current_chat_history] == [m.id for m in live.current_chat_history]
    assert [m.id for m in stored.full_chat_history] == [m.id for m in live.full_chat_history]
