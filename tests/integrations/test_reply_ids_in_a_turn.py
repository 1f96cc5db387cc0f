"""A model (or a proxy, or a cache) that gives every reply the same id, within one turn: its
answer after a tool call repeats the id of the reply that made the call."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from agents_util import lookup, model
from langchain_core.messages import AIMessage, HumanMessage
import pytest

from session_graph.integrations import SessionMiddleware, session_model_hooks
from session_graph.stores import SessionManager


def _replies() -> Any:
    return iter([AIMessage(content="", tool_calls=[{"id": "c1", "name": "lookup", "args": {"topic": "x"}}], id="same"),
                 AIMessage(content="the answer", id="same")])


def _stored(path: Path) -> list[tuple[str, str]]:
    with SessionManager(path) as fresh:
        session = fresh.get("t")
        return [(m.type, m.text[:10]) for m in session.full_chat_history] if session is not None else []


@pytest.mark.filterwarnings("ignore:create_react_agent has been moved")
@pytest.mark.parametrize("asynchronous", [False, True], ids=["sync", "async"])
def test_the_model_hooks_keep_a_tool_call_and_the_answer_that_repeats_its_id(tmp_path: Path, asynchronous: bool) -> None:
    """The reply took the tool call's place in the agent's state (``add_messages`` by id): the
    turn ended on a tool result, the model was called again (and the answer never recorded)."""
    from langgraph.prebuilt import create_react_agent

    with SessionManager(tmp_path) as manager:
        pre, post = session_model_hooks(manager=manager)
        agent = create_react_agent(model(_replies()), [lookup], pre_model_hook=pre, post_model_hook=post)
        request, config = {"messages": [HumanMessage(content="q0")]}, {"configurable": {"thread_id": "t"}}
        out = asyncio.run(agent.ainvoke(request, config)) if asynchronous else agent.invoke(request, config)
        assert [m.type for m in out["messages"]] == ["human", "ai", "tool", "ai"] and out["messages"][-1].text == "the answer"
        assert out["messages"][1].tool_calls and out["messages"][-1].id != "same"
        if asynchronous:
            asyncio.run(manager.aclose())
    assert _stored(tmp_path) == [("human", "q0"), ("ai", ""), ("tool", "facts abou"), ("ai", "the answer")]


def test_the_middleware_keeps_a_tool_call_and_the_answer_that_repeats_its_id(tmp_path: Path) -> None:
    from langchain.agents import create_agent

    with SessionManager(tmp_path) as manager:
        agent = create_agent(model(_replies()), [lookup], middleware=[SessionMiddleware(manager=manager)])
        out = agent.invoke({"messages": [HumanMessage(content="q0")]}, {"configurable": {"thread_id": "t"}})
        assert out["messages"][-1].text == "the answer"
    assert _stored(tmp_path) == [("human", "q0"), ("ai", ""), ("tool", "facts abou"), ("ai", "the answer")]
