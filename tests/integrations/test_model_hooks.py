"""The prebuilt agent's hooks and what a restarted process finds in the store.

A pre-model hook sees the model's input, never its reply: the last reply of a turn reached the
store only through the next turn's hook (never, without a checkpointer). ``session_model_hooks``
adds a post-model hook that records and writes each reply ending a turn, and the pre-model hook
saves a turn's input before its first model call, so a model call that fails never loses it.
Each check reads the store with a new manager, as a restarted process would.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from agents_util import lookup, model
from langchain_core.messages import HumanMessage
from langgraph.checkpoint.memory import InMemorySaver
import pytest

from session_graph.integrations import session_model_hooks
from session_graph.stores import SessionManager

pytestmark = pytest.mark.filterwarnings("ignore:create_react_agent has been moved")  # the older prebuilt agent, on purpose


def _stored(path: Path) -> list[tuple[str, str]]:
    with SessionManager(path) as fresh:  # a restarted process
        session = fresh.get("t")
        return [(m.type, m.text[:9]) for m in session.full_chat_history] if session is not None else []


def _agent(manager: SessionManager, checkpointer: Any, replies: Any = None, **kwargs: Any) -> Any:
    from langgraph.prebuilt import create_react_agent

    pre, post = session_model_hooks(manager=manager)
    return create_react_agent(model(replies, **kwargs), [lookup], pre_model_hook=pre, post_model_hook=post, checkpointer=checkpointer)


@pytest.mark.parametrize("asynchronous", [False, True], ids=["sync", "async"])
@pytest.mark.parametrize("checkpointer", [None, "memory"])
def test_each_turn_is_in_the_store_when_the_agent_returns(tmp_path: Path, checkpointer: str | None, asynchronous: bool) -> None:
    turn_of = [("human", "q{}"), ("ai", ""), ("tool", "facts abo"), ("ai", "answer {}:")]
    with SessionManager(tmp_path) as manager:
        agent = _agent(manager, InMemorySaver() if checkpointer else None)
        config = {"configurable": {"thread_id": "t"}}
        expected: list[tuple[str, str]] = []
        for turn in range(3):
            request = {"messages": [HumanMessage(content=f"q{turn}")]}
            if asynchronous:
                asyncio.run(agent.ainvoke(request, config))
            else:
                agent.invoke(request, config)
            expected += [(kind, text.format(turn)) for kind, text in turn_of]
            assert _stored(tmp_path) == expected  # the answer too, once, before the next turn starts
        if asynchronous:
            asyncio.run(manager.aclose())


def test_a_turn_s_input_is_saved_before_a_model_call_that_fails(tmp_path: Path) -> None:
    with SessionManager(tmp_path) as manager:
        agent = _agent(manager, None, fail_on={2})  # the first model call of the second turn fails
        config = {"configurable": {"thread_id": "t"}}
        agent.invoke({"messages": [HumanMessage(content="q0")]}, config)
        with pytest.raises(ConnectionError):
            agent.invoke({"messages": [HumanMessage(content="q1")]}, config)
        assert _stored(tmp_path)[-2:] == [("ai", "answer 0:"), ("human", "q1")]  # the input outlives the failure


def test_the_post_model_hook_leaves_the_agent_s_state_as_it_was(tmp_path: Path) -> None:
    with SessionManager(tmp_path) as manager:
        agent = _agent(manager, InMemorySaver())
        config = {"configurable": {"thread_id": "t"}}
        out = agent.invoke({"messages": [HumanMessage(content="q0")]}, config)
        assert [m.type for m in out["messages"]] == ["human", "ai", "tool", "ai"]
        out = agent.invoke({"messages": [HumanMessage(content="q1")]}, config)
        assert [m.type for m in out["messages"]] == ["human", "ai", "tool", "ai"]  # one turn: the pre-model hook's Overwrite
        assert len(manager.get("t").full_chat_history) == 8  # nothing recorded twice


def test_a_reply_repeating_an_earlier_reply_s_id_is_recorded(tmp_path: Path) -> None:
    """A cache or model that repeats ids: the second answer was taken for the first and never
    recorded; the post-model hook gives it an id of its own, in the store and the state."""
    from langchain_core.messages import AIMessage

    replies = iter([AIMessage(content="first answer", id="lc_run--same-0"), AIMessage(content="second answer", id="lc_run--same-0")])
    with SessionManager(tmp_path) as manager:
        agent = _agent(manager, InMemorySaver(), replies)
        config = {"configurable": {"thread_id": "t"}}
        agent.invoke({"messages": [HumanMessage(content="q0")]}, config)
        out = agent.invoke({"messages": [HumanMessage(content="q1")]}, config)
        assert out["messages"][-1].text == "second answer" and out["messages"][-1].id != "lc_run--same-0"
    assert _stored(tmp_path) == [("human", "q0"), ("ai", "first ans"), ("human", "q1"), ("ai", "second an")]
