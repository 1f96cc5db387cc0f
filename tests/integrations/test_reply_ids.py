"""A model reply whose id the session already holds is a new message all the same.

LangChain's LLM cache answers a repeated prompt with the first answer, id and all; a custom
model may reuse ids, or give its reply the id of the user's message. Such a reply was taken for
the stored message and never recorded (the user saw an answer the store lost), and the cut of
the agent's state by id removed it with the message it shared its id with. The middleware gives
it an id of its own, in the store and in the agent's state alike."""

from __future__ import annotations

from pathlib import Path

from agents_util import lookup, model
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, HumanMessage
from langgraph.checkpoint.memory import InMemorySaver
import pytest

from session_graph.integrations import SessionMiddleware
from session_graph.stores import SessionManager


@pytest.mark.parametrize("asynchronous", [False, True], ids=["sync", "async"])
def test_a_reply_repeating_an_earlier_reply_s_id_is_recorded(tmp_path: Path, asynchronous: bool) -> None:
    import asyncio

    replies = iter([AIMessage(content="first answer", id="lc_run--same-0"), AIMessage(content="second answer", id="lc_run--same-0")])
    with SessionManager(tmp_path) as manager:
        agent = create_agent(model(replies), tools=[lookup], middleware=[SessionMiddleware(manager=manager)],
                             checkpointer=InMemorySaver())  # the state cut by id: the case where a repeated id lost the reply
        config = {"configurable": {"thread_id": "t"}}
        outs = []
        for question in ("q0", "q1"):
            request = {"messages": [HumanMessage(content=question)]}
            outs.append(asyncio.run(agent.ainvoke(request, config)) if asynchronous else agent.invoke(request, config))
        assert [m.text for m in outs[1]["messages"]] == ["second answer"]
        stored_id = manager.get("t").full_chat_history[-1].id
        assert outs[1]["messages"][-1].id == stored_id != "lc_run--same-0"  # the state holds the stored copy
    with SessionManager(tmp_path) as again:
        assert [m.text for m in again.get("t").full_chat_history] == ["q0", "first answer", "q1", "second answer"]


def test_a_reply_with_the_user_message_s_id_is_kept_with_it(tmp_path: Path) -> None:
    with SessionManager(tmp_path) as manager:
        agent = create_agent(model(iter([AIMessage(content="the answer", id="in-1")])), tools=[lookup],
                             middleware=[SessionMiddleware(manager=manager)], checkpointer=InMemorySaver())
        out = agent.invoke({"messages": [HumanMessage(content="q0", id="in-1")]}, {"configurable": {"thread_id": "t"}})
        assert [m.text for m in out["messages"]] == ["the answer"]  # no longer removed with the input it shared an id with
    with SessionManager(tmp_path) as again:
        assert [(m.type, m.text) for m in again.get("t").full_chat_history] == [("human", "q0"), ("ai", "the answer")]
