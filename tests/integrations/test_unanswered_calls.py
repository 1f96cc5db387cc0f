"""A tool call never reaches a model apart from its results, whatever ended the run.

Another middleware can end a run from ``after_model`` (LangChain's ``ToolCallLimitMiddleware`` /
``ModelCallLimitMiddleware`` with ``exit_behavior="end"``): the tool never runs, so the store holds
the call with no result (the truth: nothing answered it in the session). The next model call still
gets a valid history: the view answers such a call with a synthetic "cancelled" result, and a result
stored after other messages (two runs on one thread) is shown right after its call.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from langchain.agents import create_agent
from langchain.agents.middleware import ModelCallLimitMiddleware, ToolCallLimitMiddleware
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langgraph.checkpoint.memory import InMemorySaver
import pytest

from session_graph import JsonlStore, Session, SessionManager
from session_graph.integrations.middleware import SessionMiddleware
from tests.agents_util import ToolCallingFake, lookup


def valid(messages: list[BaseMessage]) -> bool:
    """What providers require: each call's results follow it at once, each result has its call there."""
    index = 0
    while index < len(messages):
        message = messages[index]
        if isinstance(message, ToolMessage):
            return False  # a result with no call just before it
        index += 1
        if isinstance(message, AIMessage) and message.tool_calls:
            calls = {c["id"] for c in message.tool_calls}
            while index < len(messages) and isinstance(messages[index], ToolMessage):
                if messages[index].tool_call_id not in calls:
                    return False
                calls.discard(messages[index].tool_call_id)
                index += 1
            if calls:
                return False
    return True


def replies() -> Iterator[AIMessage]:
    yield AIMessage(content="", tool_calls=[{"id": "c1", "name": "lookup", "args": {"topic": "a"}}], id="ai1")
    yield AIMessage(content="", tool_calls=[{"id": "c2", "name": "lookup", "args": {"topic": "b"}}], id="ai2")
    yield AIMessage(content="done", id="ai3")
    yield AIMessage(content="done again", id="ai4")


def two_runs(tmp_path: Path, limit: Any, checkpointer: Any, aio: bool) -> tuple[ToolCallingFake, Session]:
    manager = SessionManager(JsonlStore(tmp_path))
    model = ToolCallingFake(messages=replies())
    agent = create_agent(model, tools=[lookup], middleware=[SessionMiddleware(manager=manager), limit], checkpointer=checkpointer)
    config = {"configurable": {"thread_id": "t"}}
    for text in ("first", "second"):
        payload = {"messages": [HumanMessage(content=text)]}
        asyncio.run(agent.ainvoke(payload, config)) if aio else agent.invoke(payload, config)
    stored = SessionManager(JsonlStore(tmp_path)).get("t")
    assert stored is not None
    return model, stored


@pytest.mark.parametrize("aio", [False, True], ids=["sync", "async"])
def test_a_call_the_tool_limit_ended_is_stored_unanswered_and_shown_answered(tmp_path: Path, aio: bool) -> None:
    model, stored = two_runs(tmp_path, ToolCallLimitMiddleware(run_limit=1, exit_behavior="end"), None, aio)
    history = stored.full_chat_history
    call = next(m for m in history if m.id == "ai2")
    after = history[history.index(call) + 1]
    assert not isinstance(after, ToolMessage)  # the store records the truth: nothing answered c2 in the session
    assert all(valid(prompt) for prompt in model.prompts)
    last = model.prompts[-1]
    answer = last[[m.id for m in last].index("ai2") + 1]
    assert isinstance(answer, ToolMessage) and answer.tool_call_id == "c2" and answer.status == "error"
    assert answer.response_metadata["session_graph"]["synthetic"] == "cancelled"  # in the view only
    assert valid(stored.view().messages)


@pytest.mark.parametrize("aio", [False, True], ids=["sync", "async"])
def test_with_a_checkpointer_the_limits_answers_are_stored_in_order(tmp_path: Path, aio: bool) -> None:
    model, stored = two_runs(tmp_path, ToolCallLimitMiddleware(run_limit=1, exit_behavior="end"), InMemorySaver(), aio)
    history = stored.full_chat_history
    position = [m.id for m in history].index("ai2")
    answer = history[position + 1]
    assert isinstance(answer, ToolMessage) and answer.tool_call_id == "c2" and "limit" in str(answer.content).lower()
    assert valid(history) and all(valid(prompt) for prompt in model.prompts)


@pytest.mark.parametrize("aio", [False, True], ids=["sync", "async"])
def test_the_model_call_limit_leaves_a_valid_history(tmp_path: Path, aio: bool) -> None:
    model, stored = two_runs(tmp_path, ModelCallLimitMiddleware(run_limit=1, exit_behavior="end"), None, aio)
    assert all(valid(prompt) for prompt in model.prompts) and valid(stored.view().messages)


def test_a_result_stored_after_another_runs_turn_is_shown_with_its_call() -> None:
    session = Session()
    session.append_message(HumanMessage(content="run A asks", id="h1"))
    session.append_message(AIMessage(content="", tool_calls=[{"id": "cA", "name": "lookup", "args": {}}], id="aiA"))
    session.append_message(HumanMessage(content="run B asks", id="h2"))  # run B's turn while A's tool runs
    pending = session.view().messages
    assert valid(pending) and pending[2].response_metadata["session_graph"]["synthetic"] == "cancelled"
    session.append_message(AIMessage(content="B's reply", id="aiB"))
    session.append_message(ToolMessage(content="A's result", tool_call_id="cA", id="tA"))  # A's tool returns late
    shown = session.view().messages
    assert [m.id for m in shown] == ["h1", "aiA", "tA", "h2", "aiB"] and valid(shown)  # the real result, not a fake one
    assert [m.id for m in session.full_chat_history] == ["h1", "aiA", "h2", "aiB", "tA"]  # stored as it happened
    history = session.get_history()
    assert history[2] == {"role": "tool", "tool_call_id": "cA", "content": "A's result"}


def test_a_prune_never_keeps_a_late_result_without_its_call() -> None:
    session = Session().use_lite(messages=5)
    session.append_message(HumanMessage(content="first", id="h1"))
    session.append_message(AIMessage(content="", tool_calls=[{"id": "x", "name": "lookup", "args": {}}], id="a1"))
    session.append_message(HumanMessage(content="second run", id="h2"))  # another run's turn came between
    session.append_message(AIMessage(content="reply to second", id="a2"))
    session.append_message(ToolMessage(content="late result of x", tool_call_id="x", id="t1"))
    session.append_message(HumanMessage(content="third", id="h3"))
    session.append_message(AIMessage(content="ok", id="a3"))
    assert [m.id for m in session.view().messages][:3] == ["h1", "a1", "t1"]  # shown after its call
    session.resize(force="lite")
    window = session.current_chat_history
    calls = {c["id"] for m in window if isinstance(m, AIMessage) for c in m.tool_calls}
    orphans = [m.id for m in window if isinstance(m, ToolMessage) and m.tool_call_id not in calls]
    assert orphans == [] and valid(session.view().messages)
