"""A lite prune carried by the next write (``integrations/pruned.py``) is not a tool's edit in
place (``SessionBinding._edited``): the model call after it writes only if something else moved.
A pre-model hook's turn (``save=len(turn)``, no reply step) has several such calls in a row."""

from __future__ import annotations

import asyncio
from pathlib import Path

from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from save_util import counted_writes

from session_graph import Session, SessionManager
from session_graph.integrations.binding import SessionBinding


def tool_round(turn: list, t: int, k: int) -> None:
    turn += [AIMessage(content="", id=f"a{t}{k}", tool_calls=[{"name": "x", "args": {}, "id": f"c{t}{k}"}]),
             ToolMessage(content="r", tool_call_id=f"c{t}{k}", id=f"r{t}{k}")]


def hooked(tmp_path: Path) -> tuple[SessionManager, SessionBinding, list[str]]:
    manager = SessionManager(tmp_path)
    manager.session_factory = lambda key: Session(key).use_lite(messages=2)
    return manager, SessionBinding(manager=manager), counted_writes(manager, lambda session, durable: session.id)


CONFIG = {"configurable": {"thread_id": "t1"}}


def test_a_carried_prune_is_not_an_edit_at_the_next_model_call(tmp_path: Path) -> None:
    manager, binding, writes = hooked(tmp_path)
    for t in range(3):
        turn: list = [HumanMessage(content=f"q{t}", id=f"h{t}")]
        binding.step(turn, CONFIG, save=len(turn))  # the turn's input: written
        del writes[:]
        for k in range(3):  # three more model calls, each after a tool result; each prunes
            tool_round(turn, t, k)
            session = binding.step(turn, CONFIG, save=len(turn))
            assert [m.id for m in session.current_chat_history] == [f"a{t}{k}", f"r{t}{k}"]  # pruned
        assert writes == [], f"turn {t}: a carried prune was written as an edit"
    stored = SessionManager(tmp_path).get("t1")  # the next turn's first step carries the prunes
    assert [m.id for m in stored.full_chat_history] == [m.id for m in manager.get("t1").full_chat_history][:-6]


def test_a_tool_edit_after_a_carried_prune_is_written_once(tmp_path: Path) -> None:
    _, binding, writes = hooked(tmp_path)
    turn: list = [HumanMessage(content="q", id="h0")]
    binding.step(turn, CONFIG, save=len(turn))
    tool_round(turn, 0, 0)
    session = binding.step(turn, CONFIG, save=len(turn))  # prunes: carried
    del writes[:]
    session.memo["facts"] = ["a tool's edit"]  # in place, between two model calls
    tool_round(turn, 0, 1)
    binding.step(turn, CONFIG, save=len(turn))
    assert writes == ["t1"]  # the edit (and the carried prune with it)
    stored = SessionManager(tmp_path).get("t1")
    assert stored.memo.get("facts") == ["a tool's edit"]
    assert [m.id for m in stored.current_chat_history] == [m.id for m in session.current_chat_history]
    tool_round(turn, 0, 2)
    binding.step(turn, CONFIG, save=len(turn))  # prunes again, nothing edited
    assert writes == ["t1"]


def test_a_resize_that_edits_the_memo_in_place_is_written_at_once(tmp_path: Path) -> None:
    """Only a lite prune waits for the next write (``pruned.py``): a prune node (an override) that
    also notes something in the memo, in place, is written by its own step."""
    def prune_and_note(state):  # type: ignore[no-untyped-def]
        state.memo.setdefault("facts", []).append("noted by the prune")
        return {"current_chat_history": state.current_chat_history[-2:], "memo": state.memo}

    def make(key: str) -> Session:
        session = Session(key).use_lite(messages=2).override_node("lite_prune", prune_and_note)
        session.memo["facts"] = ["stored"]  # the key is there: only its list grows, in place
        return session

    manager = SessionManager(tmp_path)
    manager.session_factory = make
    binding, writes = SessionBinding(manager=manager), counted_writes(manager, lambda session, durable: session.id)
    turn: list = [HumanMessage(content="q", id="h0")]
    binding.step(turn, CONFIG, save=len(turn))
    del writes[:]
    tool_round(turn, 0, 0)
    session = binding.step(turn, CONFIG, save=len(turn))
    assert session.memo["facts"] == ["stored", "noted by the prune"]
    assert writes == ["t1"]
    assert SessionManager(tmp_path).get("t1").memo.get("facts") == ["stored", "noted by the prune"]


def test_async_steps_carry_the_prune_too(tmp_path: Path) -> None:
    manager, binding, _ = hooked(tmp_path)
    writes: list[str] = []
    real = manager.asave

    async def asave(session, *, durable: bool = True) -> None:
        before = manager.store.version(manager.tenant, session.id)
        await real(session, durable=durable)
        if manager.store.version(manager.tenant, session.id) != before:
            writes.append(session.id)

    manager.asave = asave  # type: ignore[method-assign]

    async def run() -> None:
        turn: list = [HumanMessage(content="q", id="h0")]
        await binding.astep(turn, CONFIG, save=len(turn))
        del writes[:]
        for k in range(3):
            tool_round(turn, 0, k)
            await binding.astep(turn, CONFIG, save=len(turn))
        assert writes == []  # three carried prunes, no edit
        manager.get("t1").memo["facts"] = ["a tool's edit"]
        tool_round(turn, 0, 3)
        await binding.astep(turn, CONFIG, save=len(turn))
        assert writes == ["t1"]

    asyncio.run(run())
    assert SessionManager(tmp_path).get("t1").memo.get("facts") == ["a tool's edit"]
