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


def _first_save_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, checkpointer: Any = None) -> tuple[Any, dict[str, Any], list[bool]]:
    """An agent over a manager in ``tmp_path`` after one turn (q0 -> a0; its next reply a1), whose
    manager's next ``save`` fails (disk full) and is noted in the list returned; later saves go through."""
    _STORED_AT_CALL.clear()
    manager = SessionManager(tmp_path)
    replies = iter([AIMessage(content="a0", id="a0"), AIMessage(content="a1", id="a1")])
    agent = create_agent(_Witness(messages=replies, where=str(tmp_path)), middleware=[SessionMiddleware(manager=manager)],
                         checkpointer=checkpointer)
    config: dict[str, Any] = {"configurable": {"thread_id": "t1"}}
    agent.invoke({"messages": [HumanMessage(content="q0", id="q0")]}, config)
    real, failed = manager.save, []

    def refusing(session: Any, *, durable: bool = True) -> None:
        if not failed:
            failed.append(durable)
            raise OSError("disk full (simulated)")
        real(session, durable=durable)

    monkeypatch.setattr(manager, "save", refusing)
    return agent, config, failed


def test_a_retried_input_whose_save_failed_is_stored_before_the_model_call(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A turn's durable save fails (the store refused it): the run raises, the input stays in the
    cached session, unsaved. The caller retries with the same input (same id, no checkpointer):
    the session holds that HumanMessage now, yet it is in no store: it is still the turn's start
    and must be saved (durably) before the model is called."""
    agent, config, failed = _first_save_refused(tmp_path, monkeypatch)
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


def test_a_caller_passing_its_history_each_run_records_each_message_once_and_saves_each_input_durably(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """No checkpointer, the stock habit: each run gets the last result's messages and the new
    input. The held history is not recorded again; the new input (an earlier one held) is saved
    durably once, before the model call; the result holds the whole conversation, as a stock agent's."""
    from agents_util import lookup, model

    _STORED_AT_CALL.clear()
    manager = SessionManager(tmp_path)
    agent = create_agent(model(), tools=[lookup], middleware=[SessionMiddleware(manager=manager)])
    config = {"configurable": {"thread_id": "t1"}}
    durables: list[bool] = []
    real = manager.save

    def counting(session: Any, *, durable: bool = True) -> None:
        durables.append(durable)
        real(session, durable=durable)

    monkeypatch.setattr(manager, "save", counting)
    messages: list[Any] = []
    for turn in range(3):
        durables.clear()
        messages = agent.invoke({"messages": [*messages, HumanMessage(content=f"q{turn}", id=f"q{turn}")]}, config)["messages"]
        assert durables.count(True) == 1 and durables[0] is True  # the input, before the model call
    stored = manager.get("t1").full_chat_history
    assert [m.id for m in stored] == [m.id for m in messages]
    assert [m.type for m in stored] == ["human", "ai", "tool", "ai"] * 3


@pytest.mark.parametrize("asynchronous", [False, True])
def test_parallel_calls_resumed_by_another_process_keep_their_call_before_both_results(tmp_path: Path, asynchronous: bool) -> None:
    """The tool hook records the calling reply with each result: two parallel calls resumed by a
    process whose session lacks the reply (it lived in the checkpoint only) store it once, before both."""
    from agents_util import lookup, model
    from langgraph.checkpoint.memory import InMemorySaver

    calls = [{"id": f"c{i}", "name": "lookup", "args": {"topic": f"t{i}"}} for i in range(2)]
    saver = InMemorySaver()
    config = {"configurable": {"thread_id": "t1"}}

    def agent_on(llm: Any) -> Any:
        return create_agent(llm, tools=[lookup], middleware=[SessionMiddleware(manager=SessionManager(tmp_path))],
                            checkpointer=saver, interrupt_before=["tools"])

    agent_on(model(iter([AIMessage(content="", id="r1", tool_calls=calls)]))).invoke(
        {"messages": [HumanMessage(content="look both up", id="q1")]}, config)
    resumed = agent_on(model(iter([AIMessage(content="done", id="a2")])))
    if asynchronous:
        asyncio.run(resumed.ainvoke(None, config))
    else:
        resumed.invoke(None, config)
    history = SessionManager(tmp_path).get("t1").full_chat_history
    assert [m.type for m in history] == ["human", "ai", "tool", "tool", "ai"]
    assert sorted(m.tool_call_id for m in history[2:4]) == ["c0", "c1"] and history[1].id == "r1"


def test_a_run_resumed_from_its_checkpoint_after_a_failed_input_save_stores_the_input_first(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """With a checkpointer the retry is a resume (``invoke(None)``): the checkpoint holds the input
    the session holds unsaved; it is saved before the model call all the same."""
    from langgraph.checkpoint.memory import InMemorySaver

    agent, config, failed = _first_save_refused(tmp_path, monkeypatch, checkpointer=InMemorySaver())
    with pytest.raises(OSError, match="disk full"):
        agent.invoke({"messages": [HumanMessage(content="q1", id="q1")]}, config)
    assert failed == [True]  # the input's durable save was the one refused
    agent.invoke(None, config)
    assert _STORED_AT_CALL[-1] == ["q0", "q1"]
    assert [m.id for m in SessionManager(tmp_path).get("t1").full_chat_history] == ["q0", "a0", "q1", "a1"]
