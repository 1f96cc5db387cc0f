"""Review of g29 (issue 25): the key from the config, no cut without a checkpointer, save_point
telling a turn's start by a HumanMessage the session does not hold yet, the direct step path."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from agents_util import ToolCallingFake
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, HumanMessage
import pytest

from session_graph import SessionManager
from session_graph.integrations import SessionMiddleware

_STORED_AT_CALL: list[list[str]] = []


class _Witness(ToolCallingFake):
    """Records, at each model call, the user inputs another process would read from the store."""

    where: str = ""

    def _generate(self, messages: Any, stop: Any = None, run_manager: Any = None, **kwargs: Any) -> Any:
        stored = SessionManager(self.where).get("t1")
        _STORED_AT_CALL.append([] if stored is None else [str(m.content) for m in stored.full_chat_history if isinstance(m, HumanMessage)])
        return super()._generate(messages, stop, run_manager, **kwargs)


def test_a_retried_input_whose_save_failed_is_stored_before_the_model_call(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A turn's durable save fails (the store refused it): the run raises, the input stays in the
    cached session, unsaved. The caller retries with the same input (same id, no checkpointer):
    the session holds that HumanMessage now, yet it is in no store: it is still the turn's start
    and must be saved (durably) before the model is called."""
    _STORED_AT_CALL.clear()
    manager = SessionManager(tmp_path)
    replies = iter([AIMessage(content="a0", id="a0"), AIMessage(content="a1", id="a1")])
    agent = create_agent(_Witness(messages=replies, where=str(tmp_path)), middleware=[SessionMiddleware(manager=manager)])
    config = {"configurable": {"thread_id": "t1"}}
    agent.invoke({"messages": [HumanMessage(content="q0", id="q0")]}, config)
    real, failed = manager.save, []

    def refusing(session: Any, *, durable: bool = True) -> None:
        if not failed:
            failed.append(durable)
            raise OSError("disk full (simulated)")
        real(session, durable=durable)

    monkeypatch.setattr(manager, "save", refusing)
    retried = HumanMessage(content="q1", id="q1")
    with pytest.raises(OSError, match="disk full"):
        agent.invoke({"messages": [retried]}, config)
    assert failed == [True]
    agent.invoke({"messages": [retried]}, config)
    assert _STORED_AT_CALL[-1] == ["q0", "q1"]  # the retried input was in the store when the model ran


def test_a_retried_input_whose_save_failed_is_stored_before_the_model_call_async(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The async twin: the retried input is saved before the model call."""
    _STORED_AT_CALL.clear()
    manager = SessionManager(tmp_path)
    replies = iter([AIMessage(content="a0", id="a0"), AIMessage(content="a1", id="a1")])
    agent = create_agent(_Witness(messages=replies, where=str(tmp_path)), middleware=[SessionMiddleware(manager=manager)])
    config = {"configurable": {"thread_id": "t1"}}
    asyncio.run(agent.ainvoke({"messages": [HumanMessage(content="q0", id="q0")]}, config))
    real, failed = manager.asave, []

    async def refusing(session: Any, *, durable: bool = True) -> None:
        if not failed:
            failed.append(durable)
            raise OSError("disk full (simulated)")
        await real(session, durable=durable)

    monkeypatch.setattr(manager, "asave", refusing)
    retried = HumanMessage(content="q1", id="q1")
    with pytest.raises(OSError, match="disk full"):
        asyncio.run(agent.ainvoke({"messages": [retried]}, config))
    assert failed == [True]
    asyncio.run(agent.ainvoke({"messages": [retried]}, config))
    assert _STORED_AT_CALL[-1] == ["q0", "q1"]
