"""``remember`` and ``forget_memory`` during a memory store outage: the tool answers that memory
is unavailable right now (as ``search_memory`` does), the agent's turn goes on, nothing is
written; a real data error still fails as our ``StoreError``. Sync and async, in ``create_agent``."""

from __future__ import annotations

import asyncio
from typing import Any

from agents_util import ToolCallingFake
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langgraph.checkpoint.memory import InMemorySaver
from memory_util import FailingStore as Failing
import psycopg
import pytest

from session_graph import Session, StoreError
from session_graph.integrations import SessionMiddleware
from session_graph.memory import MemoryConfig, list_memories
from session_graph.memory.recall import remember

CALLS = [
    {"id": "r", "name": "remember", "args": {"content": "The user prefers tabs.", "category": "preferences", "key": "indent"}},
    {"id": "f", "name": "forget_memory", "args": {"memory_id": "memory://user/alice/preferences/testing"}},
]


def run(failure: BaseException, use_async: bool) -> tuple[Failing, MemoryConfig, Session, Any]:
    store = Failing()
    memory = MemoryConfig(store=store, user="alice", agent="coder")
    remember(memory, "The user prefers pytest-asyncio in strict mode.", "preferences", key="testing")
    llm = ToolCallingFake(messages=iter([AIMessage(content="", tool_calls=CALLS), AIMessage(content="done")]))
    session = Session()
    agent = create_agent(llm, tools=[], middleware=[SessionMiddleware(session, memory=memory, recall_k=0)],
                         checkpointer=InMemorySaver())
    store.failure = failure
    request, config = {"messages": [HumanMessage(content="remember tabs, forget the testing note")]}, {"configurable": {"thread_id": "t"}}
    result = asyncio.run(agent.ainvoke(request, config)) if use_async else agent.invoke(request, config)
    return store, memory, session, result


@pytest.mark.parametrize("use_async", [False, True])
@pytest.mark.parametrize("failure", [psycopg.OperationalError("the connection is closed"), ConnectionResetError("reset by peer")])
def test_remember_and_forget_answer_that_memory_is_unavailable(failure: BaseException, use_async: bool) -> None:
    store, memory, session, result = run(failure, use_async)
    assert result["messages"][-1].content == "done"  # the turn went on
    answers = {m.tool_call_id: str(m.content) for m in session.full_chat_history if isinstance(m, ToolMessage)}
    assert answers["r"].startswith("Not stored: the memory store is unavailable right now")
    assert answers["f"].startswith("Not forgotten: the memory store is unavailable right now")
    store.failure = None
    assert [value["key"] for value in list_memories(memory)] == ["testing"]  # nothing written, nothing forgotten


def test_a_real_data_error_in_a_tool_is_our_store_error() -> None:
    with pytest.raises(StoreError, match="the memory store failed") as caught:
        run(ValueError("row 7 of the memory table is not JSON"), use_async=False)
    assert isinstance(caught.value.__cause__, ValueError)
