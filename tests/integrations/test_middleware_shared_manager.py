"""Two agents (two SessionMiddleware) over one SessionManager, on one thread at the same time:
their steps on the session take turns (the lock is the manager's key, not the middleware's),
so every message either run accepted is stored once."""

from __future__ import annotations

import asyncio
from collections import Counter
from pathlib import Path

from agents_util import lookup, model
from langchain.agents import create_agent
from langchain_core.messages import HumanMessage

from session_graph import SessionManager
from session_graph.integrations import SessionMiddleware


def test_two_agents_on_one_manager_and_thread_take_turns_and_lose_nothing(tmp_path: Path) -> None:
    manager = SessionManager(tmp_path)
    real, in_flight, peak = manager.asave, [0], [0]

    async def watched(session, *, durable: bool = True) -> None:  # a save that takes a while: overlaps show
        in_flight[0] += 1
        peak[0] = max(peak[0], in_flight[0])
        try:
            await asyncio.sleep(0.01)
            await real(session, durable=durable)
        finally:
            in_flight[0] -= 1

    manager.asave = watched
    agents = {name: create_agent(model(), tools=[lookup], middleware=[SessionMiddleware(manager=manager)]) for name in "ab"}
    config = {"configurable": {"thread_id": "t1"}}

    async def runs() -> None:
        await asyncio.gather(*(agent.ainvoke({"messages": [HumanMessage(content=f"{name}-{turn}")]}, config)
                               for turn in range(2) for name, agent in agents.items()))

    asyncio.run(runs())
    assert peak[0] == 1  # never two saves of one session at once
    stored = SessionManager(tmp_path).get("t1").full_chat_history
    assert max(Counter(m.id for m in stored).values()) == 1
    assert sorted(m.content for m in stored if m.type == "human") == ["a-0", "a-1", "b-0", "b-1"]
    assert len(stored) == 16


def test_the_middleware_keeps_no_session_the_managers_cache_let_go(tmp_path: Path) -> None:
    import gc
    import weakref

    manager = SessionManager(tmp_path, cache_size=2)
    agent = create_agent(model(), tools=[lookup], middleware=[SessionMiddleware(manager=manager)])
    served = []
    for thread in range(6):  # a server: one thread per user
        agent.invoke({"messages": [HumanMessage(content=f"hi {thread}")]}, {"configurable": {"thread_id": f"u{thread}"}})
        served.append(weakref.ref(manager.cache.get(f"u{thread}").session))
    gc.collect()
    assert sum(ref() is not None for ref in served) == 2  # the cache's two, not every thread ever served
    assert SessionManager(tmp_path).get("u0").full_chat_history[0].content == "hi 0"
