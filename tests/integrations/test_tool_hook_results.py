"""What the tool hook must keep: a tool's result whose run ends before another model call (a call
limit, a return_direct tool returning a list), through a next step that fails, a session the cache
lets go, a save the app makes between runs; and a result changed by a middleware around ours."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
import gc
from pathlib import Path
from typing import Any

from agents_util import lookup, model
from langchain.agents import create_agent
from langchain.agents.middleware import AgentMiddleware, ModelCallLimitMiddleware
from langchain.tools import ToolRuntime
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.tools import tool
from langgraph.types import Command
import pytest

from session_graph import JsonlStore, Session, SessionManager
from session_graph.errors import StoreUnavailableError
from session_graph.integrations import SessionMiddleware

CONFIG = {"configurable": {"thread_id": "t"}}


def run(agent: Any, text: str, aio: bool) -> Any:
    payload = {"messages": [HumanMessage(content=text)]}
    return asyncio.run(agent.ainvoke(payload, CONFIG)) if aio else agent.invoke(payload, CONFIG)


def calls() -> Iterator[AIMessage]:
    for i in range(1, 4):
        yield AIMessage(content="", tool_calls=[{"id": f"c{i}", "name": "lookup", "args": {"topic": str(i)}}], id=f"ai{i}")


@pytest.mark.parametrize("aio", [False, True], ids=["sync", "async"])
def test_a_tool_result_survives_a_next_step_that_fails_before_recording(tmp_path: Path, aio: bool, monkeypatch: Any) -> None:
    """A run ends after its tools node (c1's result not saved yet); the next turn's step fails on the
    store before it records anything (the caller retries the turn): the retry still records c1's
    result right after its call, never a call without its result in the store."""
    store = JsonlStore(tmp_path)
    manager = SessionManager(store)
    limit = ModelCallLimitMiddleware(run_limit=1, exit_behavior="end")  # ends each run after its tools node
    agent = create_agent(model(calls()), tools=[lookup], middleware=[SessionMiddleware(manager=manager), limit])
    run(agent, "first", aio)
    real = store.version
    failures = iter([StoreUnavailableError("store down (simulated)")])

    def version(*args: Any, **kwargs: Any) -> Any:
        error = next(failures, None)
        if error is not None:
            raise error
        return real(*args, **kwargs)

    monkeypatch.setattr(store, "version", version)
    with pytest.raises(StoreUnavailableError):
        run(agent, "second", aio)
    run(agent, "second", aio)  # the caller retries the turn
    stored = SessionManager(JsonlStore(tmp_path)).get("t")
    assert stored is not None
    kinds = [(m.type, getattr(m, "tool_call_id", None) or m.content) for m in stored.full_chat_history]
    assert kinds[:4] == [("human", "first"), ("ai", ""), ("tool", "c1"), ("human", "second")]


def two_rounds() -> Iterator[AIMessage]:
    yield AIMessage(content="", tool_calls=[{"id": "c1", "name": "evicting", "args": {"topic": "a"}}], id="ai1")
    yield AIMessage(content="", tool_calls=[{"id": "c2", "name": "evicting", "args": {"topic": "b"}}], id="ai2")
    yield AIMessage(content="done", id="ai3")


def test_a_result_is_not_left_with_a_session_the_cache_let_go(tmp_path: Path) -> None:
    """The second reply wrote the turn so far; while its tool runs the manager's cache lets the
    saved session go (another thread's session comes in). Its result is not left with that object
    alone: once nothing holds it any more, the result would go with it, and the store keep c2's
    call without it."""
    manager = SessionManager(JsonlStore(tmp_path), cache_size=1)
    holder: list[Any] = []

    @tool
    def evicting(topic: str) -> str:
        """Look a topic up (the second call lets another session into the cache)."""
        if topic == "b":
            holder.append(manager.cache.get("t").session)  # e.g. the app showing it: alive until the run ends
            manager.get_or_create("u")
        return f"facts about {topic}"

    limit = ModelCallLimitMiddleware(run_limit=2, exit_behavior="end")  # ends the run after the second tools node
    agent = create_agent(model(two_rounds()), tools=[evicting], middleware=[SessionMiddleware(manager=manager), limit])
    run(agent, "first", False)
    holder.clear()
    gc.collect()
    run(agent, "second", False)
    stored = SessionManager(JsonlStore(tmp_path)).get("t")
    assert stored is not None
    assert [(m.type, getattr(m, "tool_call_id", None)) for m in stored.full_chat_history][:6] == [
        ("human", None), ("ai", None), ("tool", "c1"), ("ai", None), ("tool", "c2"), ("human", None)]


def test_a_save_between_runs_keeps_the_result_with_its_call(tmp_path: Path) -> None:
    """A run ends after its tools node (a call limit); the app then edits the session's metadata
    and saves it through the manager, as the README shows. The store must not hold c1's call
    without its result: a crash now, or the cache letting the saved session go, loses it for good."""
    manager = SessionManager(JsonlStore(tmp_path), cache_size=1)
    limit = ModelCallLimitMiddleware(run_limit=1, exit_behavior="end")
    agent = create_agent(model(calls()), tools=[lookup], middleware=[SessionMiddleware(manager=manager), limit])
    run(agent, "first", False)
    session = manager.get("t")
    assert session is not None
    session.metadata["topic"] = "lookups"
    manager.save(session)
    stored = SessionManager(JsonlStore(tmp_path)).get("t")
    assert stored is not None
    assert [(m.type, getattr(m, "tool_call_id", None)) for m in stored.full_chat_history] == [
        ("human", None), ("ai", None), ("tool", "c1")]


class Truncating(AgentMiddleware):
    """A middleware around SessionMiddleware's tool hook that shortens every tool result (same id)."""

    def wrap_tool_call(self, request: Any, handler: Any) -> Any:
        result = handler(request)
        return result.model_copy(update={"content": "TRUNCATED"}) if isinstance(result, ToolMessage) else result


@pytest.mark.xfail(strict=True, reason="pre-existing (main too): the tool hook records the result as the handler "
                   "returned it; a middleware around ours that changes it (same id) reaches the agent's state only, and "
                   "the next step skips it by id: the model is shown, and the store keeps, the unchanged result")
def test_a_result_changed_by_a_middleware_around_ours_is_what_the_model_sees() -> None:
    replies = iter([AIMessage(content="", tool_calls=[{"id": "c1", "name": "lookup", "args": {"topic": "a"}}], id="ai1"),
                    AIMessage(content="done", id="ai2")])
    fake = model(replies)
    session = Session()
    agent = create_agent(fake, tools=[lookup], middleware=[Truncating(), SessionMiddleware(session)])
    agent.invoke({"messages": [HumanMessage(content="q")]})
    assert [m.content for m in fake.prompts[1] if isinstance(m, ToolMessage)] == ["TRUNCATED"]


@pytest.mark.parametrize("aio", [False, True], ids=["sync", "async"])
def test_a_return_direct_tool_returning_a_list_has_its_result_recorded(tmp_path: Path, aio: bool) -> None:
    """A tool may return a list of ToolMessages and Commands (one terminating its call): a
    ``return_direct`` one ends the run in the tools node, so only the tool hook can record it."""

    @tool(return_direct=True)
    def listed(topic: str, runtime: ToolRuntime) -> list[Any]:
        """Answer with a list: a command adding a note, then the call's result."""
        note = Command(update={"messages": []})
        return [note, ToolMessage(content=f"listed {topic}", tool_call_id=runtime.tool_call_id)]

    manager = SessionManager(JsonlStore(tmp_path))
    replies = iter([AIMessage(content="", tool_calls=[{"id": "l1", "name": "listed", "args": {"topic": "a"}}], id="ai1")])
    agent = create_agent(model(replies), tools=[listed], middleware=[SessionMiddleware(manager=manager)])
    run(agent, "first", aio)
    stored = SessionManager(JsonlStore(tmp_path)).get("t")
    assert stored is not None
    assert [(m.type, getattr(m, "tool_call_id", None)) for m in stored.full_chat_history] == [
        ("human", None), ("ai", None), ("tool", "l1")]

