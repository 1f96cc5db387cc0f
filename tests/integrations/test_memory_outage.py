"""A memory store that goes down mid-conversation (issue 22): the agent's turn goes on without
recalled memories, a warning is logged and the outage is kept in ``recall_failures``; the store
back, recall resumes; a real data error still fails as our ``StoreError``; ``on_memory_error="raise"``
raises the retryable ``StoreUnavailableError``. Sync and async, in ``create_agent``."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from agents_util import ToolCallingFake
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langgraph.checkpoint.memory import InMemorySaver
from memory_util import FailingStore as Failing
import psycopg
import pytest

from session_graph import Session, StoreError, StoreUnavailableError
from session_graph.integrations import SessionMiddleware
from session_graph.memory import MemoryConfig
from session_graph.memory.recall import remember


def setup(**options: Any) -> tuple[Failing, SessionMiddleware, Any, ToolCallingFake]:
    store = Failing()
    memory = MemoryConfig(store=store, user="alice", agent="coder")
    remember(memory, "The user prefers pytest-asyncio in strict mode.", "preferences", key="testing")
    llm = ToolCallingFake(messages=iter([AIMessage(content=f"answer {n}") for n in range(10)]))
    middleware = SessionMiddleware(Session(), memory=memory, recall_k=3, **options)
    agent = create_agent(llm, tools=[], middleware=[middleware], checkpointer=InMemorySaver(), system_prompt="Be brief.")
    return store, middleware, agent, llm


def ask(agent: Any, use_async: bool) -> Any:
    request = {"messages": [HumanMessage(content="How do I configure pytest strict mode?")]}
    config = {"configurable": {"thread_id": "t"}}
    return asyncio.run(agent.ainvoke(request, config)) if use_async else agent.invoke(request, config)


@pytest.mark.parametrize("use_async", [False, True])
@pytest.mark.parametrize("failure", [psycopg.OperationalError("the connection is closed"), ConnectionResetError("reset by peer")])
def test_an_outage_never_fails_the_turn_and_is_reported(use_async: bool, failure: BaseException,
                                                         caplog: pytest.LogCaptureFixture) -> None:
    store, middleware, agent, llm = setup()
    store.failure = failure
    with caplog.at_level(logging.WARNING, logger="session_graph.integrations.middleware"):
        result = ask(agent, use_async)
    assert result["messages"][-1].content == "answer 0"  # the turn answered
    assert "Relevant long-term memories" not in llm.prompts[0][0].content
    (failed,) = middleware.recall_failures
    assert failed["user"] == "alice" and type(failure).__name__ in failed["error"]
    assert any("memory store is unavailable" in r.getMessage() for r in caplog.records)
    store.failure = None  # back: the next turn recalls again
    ask(agent, use_async)
    assert "strict mode" in llm.prompts[1][0].content and len(middleware.recall_failures) == 1


def test_a_real_data_error_is_our_store_error() -> None:
    store, _, agent, _ = setup()
    store.failure = ValueError("row 7 of the memory table is not JSON")
    with pytest.raises(StoreError, match="recall from the memory store failed") as caught:
        ask(agent, use_async=False)
    assert not isinstance(caught.value, StoreUnavailableError) and isinstance(caught.value.__cause__, ValueError)


def test_raise_on_memory_error_raises_the_retryable_error() -> None:
    store, _, agent, _ = setup(on_memory_error="raise")
    store.failure = psycopg.OperationalError("the connection is closed")
    with pytest.raises(StoreUnavailableError) as caught:
        ask(agent, use_async=False)
    assert caught.value.retryable


def test_the_search_tool_answers_that_memory_is_unavailable() -> None:
    store = Failing()
    memory = MemoryConfig(store=store, user="alice", agent="coder")
    llm = ToolCallingFake(messages=iter([AIMessage(content="", tool_calls=[{"id": "s", "name": "search_memory",
                                                                             "args": {"query": "pytest"}}]),
                                         AIMessage(content="done")]))
    session = Session()
    agent = create_agent(llm, tools=[], middleware=[SessionMiddleware(session, memory=memory, recall_k=0)],
                         checkpointer=InMemorySaver())
    store.failure = psycopg.OperationalError("the connection is closed")
    agent.invoke({"messages": [HumanMessage(content="what do you know?")]}, {"configurable": {"thread_id": "t"}})
    (result,) = [m for m in session.full_chat_history if isinstance(m, ToolMessage)]
    assert result.content.startswith("Memory search is unavailable right now")
