"""An agent turn with SessionMiddleware costs one durable write: the input is durable before the
first model call, the answer outlives the process, and a JSONL save appends only what changed."""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path

from agents_util import lookup, model
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, HumanMessage, RemoveMessage
from langgraph.checkpoint.memory import InMemorySaver
import pytest
from save_util import counted_writes

from session_graph import Session, SessionManager
from session_graph._base.files import encode_name
from session_graph.integrations import SessionMiddleware


def agent_over(manager: SessionManager, llm=None, checkpointer=None):
    llm = llm or model()
    return create_agent(llm, tools=[lookup], middleware=[SessionMiddleware(manager=manager)], system_prompt="Be brief.",
                        checkpointer=checkpointer), llm


def config() -> dict:
    return {"configurable": {"thread_id": "t1"}}


@pytest.fixture
def fsyncs(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    calls: list[int] = []
    real = os.fsync

    def counted(fd: int) -> None:
        calls.append(fd)
        real(fd)

    monkeypatch.setattr(os, "fsync", counted)
    return calls


def test_a_turn_with_a_tool_call_fsyncs_once_and_a_new_process_reads_all_of_it(tmp_path: Path, fsyncs: list[int]) -> None:
    manager = SessionManager(tmp_path)
    manager.session_factory = lambda key: Session(key).use_lite(chars=2000)
    agent, _ = agent_over(manager)
    for turn in range(6):
        before = len(fsyncs)
        agent.invoke({"messages": [HumanMessage(content=f"question {turn}")]}, config())
        assert len(fsyncs) - before == 1, f"turn {turn}: {len(fsyncs) - before} fsyncs"
    live = manager.get("t1")
    again = SessionManager(tmp_path).get("t1")  # another process: the last answer is there too
    assert [m.id for m in again.full_chat_history] == [m.id for m in live.full_chat_history]
    assert len(again.full_chat_history) == 24 and again.full_chat_history[-1].type == "ai"
    assert [m.id for m in again.current_chat_history] == [m.id for m in live.current_chat_history]


def test_the_input_is_durable_before_the_first_model_call_fails(tmp_path: Path, fsyncs: list[int]) -> None:
    manager = SessionManager(tmp_path)
    agent, _ = agent_over(manager, model(fail_on={0}))
    with pytest.raises(ConnectionError):
        agent.invoke({"messages": [HumanMessage(content="remember me", id="q1")]}, config())
    assert len(fsyncs) == 1  # written and flushed before the model was called
    stored = SessionManager(tmp_path).get("t1")
    assert [m.id for m in stored.full_chat_history] == ["q1"]


def test_async_turns_fsync_once_too(tmp_path: Path, fsyncs: list[int]) -> None:
    manager = SessionManager(tmp_path)
    agent, _ = agent_over(manager)

    async def run() -> None:
        for turn in range(3):
            await agent.ainvoke({"messages": [HumanMessage(content=f"question {turn}")]}, config())

    asyncio.run(run())
    assert len(fsyncs) == 3
    assert len(SessionManager(tmp_path).get("t1").full_chat_history) == 12


def test_a_save_appends_one_state_line_of_what_changed(tmp_path: Path) -> None:
    manager = SessionManager(tmp_path)
    session = manager.get_or_create("k")
    session.metadata["topic"] = "big " * 500
    for i in range(3):
        session.append_message({"role": "user", "content": f"q{i}"})
        session.append_message({"role": "assistant", "content": f"a{i}"})
        manager.save(session)
    log = tmp_path / "default" / (encode_name("k") + ".jsonl")
    states = [json.loads(line) for line in log.read_bytes().splitlines() if line.startswith(b'{"_type": "state"')]
    assert [s["full"] for s in states] == [True, False, False]
    assert "metadata" in states[0]["set"] and "metadata" not in states[1]["set"]  # unchanged: not written again
    assert states[2]["set"]["window+"][1] == [m.id for m in session.full_chat_history[-2:]]
    assert "trace" not in states[0]["set"] and "offsets" not in states[0]["set"]


def test_the_meta_file_may_lag_and_a_reader_still_sees_the_newest_state(tmp_path: Path) -> None:
    manager = SessionManager(tmp_path)
    session = manager.get_or_create("k")
    session.append_message({"role": "user", "content": "first"})
    manager.save(session)
    meta = tmp_path / "default" / (encode_name("k") + ".meta.json")
    first = meta.read_bytes()
    for i in range(5):
        session.metadata["step"] = i
        session.append_message({"role": "assistant", "content": f"a{i}"})
        manager.save(session)
    assert meta.read_bytes() == first  # not rewritten on every save: the log's state lines carry the change
    other = SessionManager(tmp_path)  # another process
    again = other.get("k")
    assert again.metadata == {"step": 4} and len(again.full_chat_history) == 6
    assert [i.message_count for i in other.list_sessions()] == [6]
    again.append_message({"role": "user", "content": "from the other one"})
    other.save(again)  # a writer that did not write the meta file last rewrites it whole
    assert json.loads(meta.read_bytes())["message_count"] == 7
    assert len(SessionManager(tmp_path).get("k").full_chat_history) == 7
    log = meta.with_name(meta.name.replace(".meta.json", ".jsonl"))
    states = [json.loads(line) for line in log.read_bytes().splitlines() if line.startswith(b'{"_type": "state"')]
    assert [s["full"] for s in states] == [True] + [False] * 6  # its state line too holds only what changed
    meta.write_text("{broken")  # and the log alone still rebuilds the newest state
    with pytest.warns(RuntimeWarning, match="damaged"):
        rebuilt = SessionManager(tmp_path).get("k")
    assert rebuilt.metadata == {"step": 4} and [m.id for m in rebuilt.full_chat_history] == [m.id for m in again.full_chat_history]


def test_a_one_tool_turn_writes_twice_the_input_durably_then_the_answer_with_the_tool_results(tmp_path: Path) -> None:
    """The save points: the input durable before the first model call; nothing before the second
    model call (the tool call and its result are still in the agent's state, so in its
    checkpoint); the reply that ends the turn written with them before the cut drops them.
    Nothing else writes (a resize rides on these)."""
    manager = SessionManager(tmp_path)
    manager.session_factory = lambda key: Session(key).use_lite(chars=2000)
    writes = counted_writes(manager)
    agent, _ = agent_over(manager)
    for turn in range(4):  # the model calls the tool once a turn, then answers: two model calls
        del writes[:]
        agent.invoke({"messages": [HumanMessage(content=f"question {turn}")]}, config())
        assert writes == [True, False], f"turn {turn}: {writes}"
        stored = SessionManager(tmp_path).get("t1")  # another process: the whole turn, in order
        assert [m.type for m in stored.full_chat_history[-4:]] == ["human", "ai", "tool", "ai"]


def test_a_reply_whose_cut_would_drop_unsaved_tool_results_writes_them_first(tmp_path: Path) -> None:
    """Two tool calls in a row: the second reply's cut drops the first call and its result from
    the agent's state, so that reply is written with them (no durable write: one fsync a turn)."""
    def replies():
        for i in range(100):
            yield AIMessage(content="", tool_calls=[{"id": f"a{i}", "name": "lookup", "args": {"topic": "x"}}])
            yield AIMessage(content="", tool_calls=[{"id": f"b{i}", "name": "lookup", "args": {"topic": "y"}}])
            yield AIMessage(content=f"answer {i}")

    manager = SessionManager(tmp_path)
    writes = counted_writes(manager)
    dropped: list[list[str]] = []
    real = SessionMiddleware.wrap_model_call

    def watched(self, request, handler):
        result = real(self, request, handler)
        removed = [m.id for m in (result.command.update or {}).get("messages", []) if isinstance(m, RemoveMessage)]
        stored = {m.id for m in SessionManager(tmp_path).get("t1").full_chat_history}  # what a new process reads now
        dropped.append([i for i in removed if i not in stored])
        return result

    SessionMiddleware.wrap_model_call = watched  # type: ignore[method-assign]
    try:
        agent, _ = agent_over(manager, model(replies()), InMemorySaver())  # a checkpointer: the state is cut
        for turn in range(3):
            del writes[:], dropped[:]
            agent.invoke({"messages": [HumanMessage(content=f"question {turn}")]}, config())
            assert writes == [True, False, False], f"turn {turn}: {writes}"
            assert dropped == [[], [], []], f"turn {turn}: the cut dropped unsaved messages {dropped}"
    finally:
        SessionMiddleware.wrap_model_call = real  # type: ignore[method-assign]
    stored = SessionManager(tmp_path).get("t1")
    assert [m.type for m in stored.full_chat_history[-6:]] == ["human", "ai", "tool", "ai", "tool", "ai"]
