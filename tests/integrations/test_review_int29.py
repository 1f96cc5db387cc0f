"""Review of the merged issue-25 work (a29, r29, w29, g29) where it meets, end to end through
``create_agent``: tool calls counted on the fast path, the direct step path, the prune save's
window start, the uncut state without a checkpointer. Each agent turn (parallel tool calls, a
``return_direct`` tool, resizes in the model hook under a tiktoken budget) is recorded once and
saved once; the store reloads the same history and window, and the totals are a fresh recount."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from agents_util import ToolCallingFake, counted_session, lookup
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
import pytest

from session_graph import Session, SessionManager
from session_graph.integrations import SessionMiddleware

TURNS = 4


@tool(return_direct=True)
def finish(topic: str) -> str:
    """Answer with the topic's facts and end the run."""
    return f"done with {topic}: " + "z " * 30


def _replies(direct: bool) -> Iterator[AIMessage]:
    for i in range(TURNS):
        calls = [{"id": f"c{i}_{k}", "name": "lookup", "args": {"topic": f"t{i}{k}", "note": "é"}} for k in range(2)]
        yield AIMessage(content="", tool_calls=calls, id=f"r{i}")
        if direct:
            yield AIMessage(content="", tool_calls=[{"id": f"f{i}", "name": "finish", "args": {"topic": f"t{i}"}}], id=f"a{i}")
        else:
            yield AIMessage(content=f"answer {i} " + "word " * 20, id=f"a{i}")



@pytest.mark.parametrize("direct", [False, True], ids=["answer", "return_direct"])
@pytest.mark.parametrize("state", ["checkpointer", "passed history", "input only"])
@pytest.mark.parametrize("run", ["invoke", "ainvoke"])
@pytest.mark.parametrize("store", ["jsonl", "sqlite"])
def test_agent_turns_are_stored_once_and_reload_equal(tmp_path: Path, store: str, run: str, state: str, direct: bool) -> None:
    target = tmp_path / "s.db" if store == "sqlite" else tmp_path / "sessions"
    manager = SessionManager(target, session_factory=counted_session)
    agent = create_agent(ToolCallingFake(messages=_replies(direct)), tools=[lookup, finish], middleware=[SessionMiddleware(manager=manager)],
                         checkpointer=InMemorySaver() if state == "checkpointer" else None)
    config: Any = {"configurable": {"thread_id": "t1"}}
    history: list[Any] = []
    for turn in range(TURNS):
        question = HumanMessage(content=f"question {turn} " + "x " * 30, id=f"q{turn}")
        given = {"messages": [*history, question] if state == "passed history" else [question]}
        result = asyncio.run(agent.ainvoke(given, config)) if run == "ainvoke" else agent.invoke(given, config)
        history = result["messages"]
    session = manager.get("t1")
    assert session is not None and session.resize_events  # resized in the model hook, mid-turn too
    ids = [m.id for m in session.full_chat_history]
    per_turn = 5 if direct else 4  # question, calling reply, two results, answer (or finish's call and result)
    assert len(ids) == len(set(ids)) == TURNS * (per_turn + 1)
    window = session.current_chat_history
    calls = {c["id"] for m in window if isinstance(m, AIMessage) for c in m.tool_calls}
    assert calls == {m.tool_call_id for m in window if isinstance(m, ToolMessage)}  # no call split from its result
    reloaded = SessionManager(target, session_factory=counted_session).get("t1")
    assert reloaded is not None
    assert [m.id for m in reloaded.full_chat_history] == ids
    assert [m.id for m in reloaded.current_chat_history] == [m.id for m in window]
    assert reloaded.window_totals == session.window_totals == Session.from_json(session.to_json()).window_totals
    assert session.window_totals.tokens > 0


@pytest.mark.parametrize("run", ["invoke", "ainvoke"])
@pytest.mark.parametrize("state", ["checkpointer", "passed history", "paused before tools"])
def test_another_process_continues_the_thread(tmp_path: Path, run: str, state: str) -> None:
    """Each turn in a fresh manager and agent (another process: the session loaded lazily from the
    store), the thread's checkpoints shared or the history passed back; with ``interrupt_before``
    the turn's tools run in the second process, resumed from the checkpoint. Each message once,
    the totals a fresh recount."""
    saver = InMemorySaver() if state != "passed history" else None
    config: Any = {"configurable": {"thread_id": "t1"}}
    replies, history = _replies(False), []
    for turn in range(TURNS):
        model = ToolCallingFake(messages=replies)
        pause = ["tools"] if state == "paused before tools" else None
        agents = [create_agent(model, tools=[lookup], checkpointer=saver, interrupt_before=pause,
                               middleware=[SessionMiddleware(manager=SessionManager(tmp_path, session_factory=counted_session))]) for _ in range(2)]
        question = HumanMessage(content=f"question {turn} " + "x " * 30, id=f"q{turn}")
        given: Any = {"messages": [*history, question] if saver is None else [question]}
        for agent, value in zip(agents, (given, None) if pause else (given,), strict=False):
            result = asyncio.run(agent.ainvoke(value, config)) if run == "ainvoke" else agent.invoke(value, config)
        history = result["messages"]
    session = SessionManager(tmp_path, session_factory=counted_session).get("t1")
    assert session is not None
    ids = [m.id for m in session.full_chat_history]
    assert len(ids) == len(set(ids)) == TURNS * 5
    assert session.window_totals == Session.from_json(session.to_json()).window_totals
