"""A resize run inside an agent is a root run (its updates stay out of the agent's stream), but a
user's node still runs for the agent's run: ``MemoryConfig.for_run()`` (what memory tools and
``session.commit`` read) names the run's user, and ``runtime.store`` is the agent's store, as
they did when the resize graph ran as the agent's subgraph."""

from __future__ import annotations

import asyncio
from typing import Any

from agents_util import lookup, model
from langchain.agents import create_agent
from langchain_core.messages import HumanMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.runtime import Runtime
from langgraph.store.memory import InMemoryStore
import pytest

from session_graph import Session
from session_graph.integrations import SessionMiddleware
from session_graph.memory import MemoryConfig
from session_graph.resize.state import ResizeContext, SessionState

MEMORY = MemoryConfig(store=InMemoryStore(), user="default-user")


def _agent(seen: list[tuple[str, Any]], store: InMemoryStore) -> tuple[Session, Any]:
    def prune(state: SessionState, runtime: Runtime[ResizeContext]) -> dict[str, Any]:
        seen.append((MEMORY.for_run().user, runtime.store))  # e.g. to remember what leaves the window
        return {"current_chat_history": state.current_chat_history[-2:]}

    session = Session().use_lite(chars=900).override_node("lite_prune", prune)
    agent = create_agent(model(), tools=[lookup], middleware=[SessionMiddleware(session)], checkpointer=InMemorySaver(),
                         store=store, system_prompt="You are helpful.")
    return session, agent


CONFIG = {"configurable": {"thread_id": "t1", "user_id": "alice"}}


def test_a_user_node_in_an_agent_s_resize_runs_for_the_agent_s_user_and_store() -> None:
    seen: list[tuple[str, Any]] = []
    store = InMemoryStore()
    session, agent = _agent(seen, store)
    for turn in range(6):
        agent.invoke({"messages": [HumanMessage(content=f"question {turn}")]}, CONFIG)
    assert seen and len(seen) == len(session.trace)
    assert {user for user, _ in seen} == {"alice"}  # not the config's default user: another user's memories
    assert all(got is store for _, got in seen)


def test_a_user_node_in_an_async_agent_s_resize_runs_for_the_agent_s_user_and_store() -> None:
    seen: list[tuple[str, Any]] = []
    store = InMemoryStore()
    session, agent = _agent(seen, store)

    async def go() -> None:
        for turn in range(6):
            await agent.ainvoke({"messages": [HumanMessage(content=f"question {turn}")]}, CONFIG)

    asyncio.run(go())
    assert seen and len(seen) == len(session.trace)
    assert {user for user, _ in seen} == {"alice"}
    assert all(got is store for _, got in seen)


def test_a_user_node_that_interrupts_a_resize_gets_an_error_that_says_so() -> None:
    """A resize runs without a checkpointer (its own root run), so a node cannot pause it with
    ``interrupt()``: the error names the interrupt and the fix, not a dict-update TypeError; the
    session is unchanged."""
    from langgraph.types import interrupt

    from session_graph.errors import HandlerResultError

    def prune(state: SessionState) -> dict[str, Any]:
        if interrupt({"approve prune of": len(state.current_chat_history)}):
            return {"current_chat_history": state.current_chat_history[-2:]}
        return {}

    session = Session().use_lite(chars=300).override_node("lite_prune", prune)
    for turn in range(4):
        session.append_message({"role": "user", "content": f"question {turn} " + "x" * 40})
        session.append_message({"role": "assistant", "content": f"answer {turn} " + "y" * 40})
    window = list(session.current_chat_history)
    with pytest.raises(HandlerResultError, match=r"interrupt\(\).*approve prune of"):
        session.resize()
    assert session.current_chat_history == window

    async def go() -> None:
        await session.async_resize()

    with pytest.raises(HandlerResultError, match=r"interrupt\(\).*approve prune of"):
        asyncio.run(go())
    assert session.current_chat_history == window
