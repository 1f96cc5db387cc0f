"""An edit a tool makes in place to the session (its memo, metadata) mid-turn is written before
the turn's next model call, as the tool's result is kept by the agent's checkpoint: a process
that dies there (or a model call that fails and ends it) loses neither. A turn whose tools edit
nothing still writes nothing before that call."""

from __future__ import annotations

import asyncio
from pathlib import Path

from agents_util import model
from langchain.agents import create_agent
from langchain_core.messages import HumanMessage
from langchain_core.tools import tool
import pytest

from session_graph import SessionManager
from session_graph.integrations import SessionMiddleware


def agent_over(manager: SessionManager, edits: bool):
    @tool
    def lookup(topic: str) -> str:
        """Look a topic up."""
        if edits:
            manager.get("t1").memo.setdefault("facts", []).append(topic)  # an edit in place, mid-turn
        return f"facts about {topic}"

    return create_agent(model(fail_on={1}), tools=[lookup], middleware=[SessionMiddleware(manager=manager)])


@pytest.mark.parametrize("asynchronous", [False, True])
def test_a_memo_edited_by_a_tool_is_stored_before_the_next_model_call(tmp_path: Path, asynchronous: bool) -> None:
    manager = SessionManager(tmp_path)
    agent = agent_over(manager, edits=True)
    turn = {"messages": [HumanMessage(content="look it up", id="q1")]}
    config = {"configurable": {"thread_id": "t1"}}
    with pytest.raises(ConnectionError):  # the second model call fails: the turn (or the process) ends there
        asyncio.run(agent.ainvoke(turn, config)) if asynchronous else agent.invoke(turn, config)
    stored = SessionManager(tmp_path).get("t1")  # what another process reads
    assert stored.memo.get("facts") == ["t0"]
    assert [m.type for m in stored.full_chat_history] == ["human", "ai", "tool"]  # the call before its result


def test_tools_that_edit_nothing_write_nothing_before_the_next_model_call(tmp_path: Path) -> None:
    manager = SessionManager(tmp_path)
    agent = agent_over(manager, edits=False)
    with pytest.raises(ConnectionError):
        agent.invoke({"messages": [HumanMessage(content="look it up", id="q1")]}, {"configurable": {"thread_id": "t1"}})
    stored = SessionManager(tmp_path).get("t1")
    assert [m.type for m in stored.full_chat_history] == ["human"]  # the call and result live in the checkpoint
