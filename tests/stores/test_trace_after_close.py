"""The resize trace of a JSONL session outlives its manager and another writer's save: only the
meta file carries the trace, and a store rewrites that file lazily (the log's state lines say
the rest), so a save whose trace changed writes it at once."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from agents_util import lookup, model
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, HumanMessage
import pytest

from session_graph import Session, SessionManager
from session_graph.integrations import SessionMiddleware
from session_graph.resize.trace import SAVED_TRACE


def manager_at(root: Path) -> SessionManager:
    manager = SessionManager(root)
    manager.session_factory = lambda key: Session(key).use_lite(chars=1500)
    return manager


@pytest.mark.parametrize("aio", [False, True], ids=["sync", "async"])
def test_an_agent_session_reloaded_after_close_keeps_every_resize_in_its_trace(tmp_path: Path, aio: bool) -> None:
    llm = model()
    config = {"configurable": {"thread_id": "t1"}}
    for turn in range(10):  # a new manager (a new process) every turn, the last one closed
        manager = manager_at(tmp_path)
        agent = create_agent(llm, tools=[lookup], middleware=[SessionMiddleware(manager=manager)], system_prompt="Be brief.")
        _turn(agent, turn, config, aio)
        live = manager.get("t1")
        records = live.trace.dump(100)
        manager.close()
        again = manager_at(tmp_path).get("t1")
        assert again.trace.dump(100) == records, f"turn {turn}"
    assert len(again.trace) >= 4  # the agent pruned on most turns: every prune is still recorded


@pytest.mark.parametrize("aio", [False, True], ids=["sync", "async"])
def test_another_writers_save_keeps_the_agents_resizes_in_its_trace(tmp_path: Path, aio: bool) -> None:
    """Another process reads the session while this one runs (no close): the trace it reads, and
    so saves back and this one reloads, holds every resize this one made."""
    manager, llm = manager_at(tmp_path), model()
    agent = create_agent(llm, tools=[lookup], middleware=[SessionMiddleware(manager=manager)], system_prompt="Be brief.")
    config = {"configurable": {"thread_id": "t1"}}
    for turn in range(10):
        _turn(agent, turn, config, aio)
        live = manager.get("t1")
        other = manager_at(tmp_path)
        seen = other.get("t1")
        assert seen.trace.dump(100) == live.trace.dump(100), f"turn {turn}: another process reads an old trace"
        if turn % 3 == 1:  # the other writer adds a message: this manager reloads the session on its next get
            seen.append_message(HumanMessage(content=f"from another writer {turn}", id=f"b{turn}"))
            other.save(seen)
        other.close()
    assert len(manager.get("t1").trace) >= 4


def test_an_export_right_after_prunes_carries_every_resize(tmp_path: Path) -> None:
    manager = SessionManager(tmp_path)
    session = manager.get_or_create("k").use_lite(messages=6)
    for i in range(20):  # appended saves, most after a lite prune
        session.append_message(HumanMessage(content=f"question {i}", id=f"u{i}"))
        session.append_message(AIMessage(content=f"answer {i}", id=f"a{i}"))
        if session.judge_resize():
            session.resize()
        manager.save(session)
    exported = json.loads(manager.export("k"))["state"]["trace"]
    assert len(session.trace) >= 10 and exported == session.trace.dump(SAVED_TRACE)


def _turn(agent: Any, turn: int, config: dict[str, Any], aio: bool) -> None:
    """One agent turn (a question of its number), sync or through ``ainvoke``."""
    question = {"messages": [HumanMessage(content=f"question {turn} " + "x" * 40)]}
    if aio:
        asyncio.run(agent.ainvoke(question, config))
    else:
        agent.invoke(question, config)
