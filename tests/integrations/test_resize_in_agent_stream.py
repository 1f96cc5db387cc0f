"""A resize run inside an agent: its updates (which hold the whole history) stay out of the
agent's stream, even with ``subgraphs=True``, while callbacks still see it as a child run."""

from __future__ import annotations

import asyncio
from typing import Any
from uuid import UUID

from agents_util import lookup, model
from langchain.agents import create_agent
from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.messages import HumanMessage
from langgraph.checkpoint.memory import InMemorySaver

from session_graph import Session
from session_graph.integrations import SessionMiddleware


class Runs(BaseCallbackHandler):
    """Every chain run started: name, its id and its parent's."""

    def __init__(self) -> None:
        self.runs: list[tuple[str | None, UUID, UUID | None]] = []

    def on_chain_start(self, serialized: Any, inputs: Any, *, run_id: UUID, parent_run_id: UUID | None = None, **kwargs: Any) -> None:
        self.runs.append((kwargs.get("name"), run_id, parent_run_id))


def _setup() -> tuple[Session, Any, Runs, dict[str, Any]]:
    session = Session().use_lite(chars=900)
    agent = create_agent(model(), tools=[lookup], middleware=[SessionMiddleware(session)], checkpointer=InMemorySaver(),
                         system_prompt="You are helpful.")
    runs = Runs()
    return session, agent, runs, {"configurable": {"thread_id": "t1"}, "callbacks": [runs]}


def _check(session: Session, runs: Runs, events: list[tuple[Any, str, Any]]) -> None:
    assert len(session.trace) >= 3  # the turns did resize
    assert {namespace for namespace, _, _ in events} == {()}  # nothing streamed from inside another graph
    for _, _, chunk in events:
        assert not any(isinstance(update, dict) and "full_chat_history" in update for update in chunk.values())
        assert "full_chat_history" not in chunk
    ids = {run_id for _, run_id, _ in runs.runs}
    resizes = [(run_id, parent) for name, run_id, parent in runs.runs if name == "session_graph.resize"]
    assert len(resizes) == len(session.trace)  # every resize is a graph run the callbacks see...
    assert all(parent in ids for _, parent in resizes)  # ...as a child of one of the agent's runs
    assert sum(name == "lite_prune" and parent in {r for r, _ in resizes} for name, _, parent in runs.runs) == len(resizes)


def test_an_agent_stream_with_subgraphs_gets_no_resize_updates() -> None:
    session, agent, runs, config = _setup()
    events = [event for turn in range(8)
              for event in agent.stream({"messages": [HumanMessage(content=f"question {turn}")]}, config,
                                        subgraphs=True, stream_mode=["updates", "values"])]
    _check(session, runs, events)


def test_an_async_agent_stream_with_subgraphs_gets_no_resize_updates() -> None:
    session, agent, runs, config = _setup()

    async def go() -> list[Any]:
        return [event for turn in range(8)
                async for event in agent.astream({"messages": [HumanMessage(content=f"question {turn}")]}, config,
                                                 subgraphs=True, stream_mode=["updates", "values"])]

    _check(session, runs, asyncio.run(go()))
