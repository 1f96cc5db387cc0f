"""A run paused between the model's tool call and the tools (``interrupt_before``, human in the
loop) and resumed by another process from a durable checkpointer keeps the tool call before its
result in the session: the paused reply lived in the checkpoint only (no write before the tools),
so the resumed process must record it before the result the tool returns."""

from __future__ import annotations

import asyncio
from pathlib import Path

from agents_util import lookup, model
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, HumanMessage
from langgraph.checkpoint.memory import InMemorySaver
import pytest

from session_graph import SessionManager
from session_graph.integrations import SessionMiddleware


def agent_on(store: Path, saver: InMemorySaver, llm=None):
    manager = SessionManager(store)  # a new manager per agent: what a restarted process holds
    return create_agent(llm or model(), tools=[lookup], middleware=[SessionMiddleware(manager=manager)],
                        checkpointer=saver, interrupt_before=["tools"])


def config() -> dict:
    return {"configurable": {"thread_id": "t1"}}


@pytest.mark.parametrize("asynchronous", [False, True])
def test_a_run_resumed_by_another_process_keeps_the_tool_call_before_its_result(tmp_path: Path, asynchronous: bool) -> None:
    saver = InMemorySaver()  # shared by both "processes": a durable checkpointer's part
    first = agent_on(tmp_path, saver)
    first.invoke({"messages": [HumanMessage(content="look it up", id="q1")]}, config())  # pauses before the tools
    assert [m.type for m in first.get_state(config()).values["messages"]] == ["ai"]
    resumed = agent_on(tmp_path, saver, model(iter([AIMessage(content="done", id="a2")])))  # the process restarted: its session loads from the store
    if asynchronous:
        asyncio.run(resumed.ainvoke(None, config()))
    else:
        resumed.invoke(None, config())
    history = SessionManager(tmp_path).get("t1").full_chat_history
    assert [m.type for m in history] == ["human", "ai", "tool", "ai"]
    assert history[2].tool_call_id == history[1].tool_calls[0]["id"] and history[3].id == "a2"
