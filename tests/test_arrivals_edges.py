"""Review of one record per message (ra28): the stamps by position and the ledger's positions
stay right when the full history is changed by something other than ``append_message`` (a
replaced node that appends to it in place, as rule 2 allows, or swaps a message there), when two
threads append at once or one reads a stamp while the history is replaced, and for a clock
before 1970."""

from __future__ import annotations

import asyncio
import dataclasses
import threading
import time
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
import pytest

from session_graph import Session
from session_graph._base.ids import stamp_at
from session_graph.errors import MessageError
from session_graph.resize.ledger import Ledger

_START = 1_767_225_600_000_000_000  # ns


def _clock(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """time.time_ns one microsecond later at each call; [0] is the last instant handed out (ns)."""
    now = [_START]

    def tick() -> int:
        now[0] += 1_000
        return now[0]

    monkeypatch.setattr(time, "time_ns", tick)
    return now


def _session(count: int, now: list[int]) -> tuple[Session, dict[str, str]]:
    session = Session("k")
    session.set_settings("session.resize.every_n_turns", 0)
    stamps: dict[str, str] = {}
    for i in range(count):
        session.append_message((HumanMessage if i % 2 == 0 else AIMessage)(content=f"message {i}", id=f"m{i}"))
        stamps[f"m{i}"] = stamp_at(now[0] // 1000)
    return session, stamps


def _append(session: Session, message: BaseMessage, now: list[int], stamps: dict[str, str]) -> None:
    session.append_message(message)
    stamps[message.id or ""] = stamp_at(now[0] // 1000)


def _grows_in_place(state: Any) -> dict[str, Any]:
    """A replaced ``lite_prune``: appends a note to the full history in place (it only grows: rule 2)
    and keeps it, with the last two messages, in the window."""
    note = AIMessage(content="a note the node added", id="note")
    state.full_chat_history.append(note)
    return {"current_chat_history": [*state.current_chat_history[-2:], note]}


def _consistent(session: Session) -> None:
    """Every message of the full history found where it is, refused when appended again."""
    for position, message in enumerate(session.full_chat_history):
        assert session._ledger.position(message.id or "") == position, message.id
        with pytest.raises(MessageError, match="already in session"):
            session.append_message(HumanMessage(content="again", id=message.id))


def test_a_node_that_grows_the_full_history_in_place_leaves_every_stamp_with_its_message(monkeypatch: pytest.MonkeyPatch) -> None:
    now = _clock(monkeypatch)
    session, stamps = _session(6, now)
    session.override_node("lite_prune", _grows_in_place)
    session.resize(force="lite")
    assert [m.id for m in session.full_chat_history][-2:] == ["m5", "note"]
    _append(session, HumanMessage(content="after", id="after"), now, stamps)
    assert dict(session.arrived_at) == stamps  # the note has no stamp (as before), "after" keeps its own
    assert session.arrived_at.get("after") == stamps["after"] and "note" not in session.arrived_at


def test_a_node_that_grows_the_full_history_in_place_has_its_message_found(monkeypatch: pytest.MonkeyPatch) -> None:
    now = _clock(monkeypatch)
    session, _ = _session(6, now)
    session.override_node("lite_prune", _grows_in_place)
    session.resize(force="lite")
    session.append_message(HumanMessage(content="after", id="after"))
    assert AIMessage(content="", id="note") in session
    _consistent(session)  # a second message "note" would be a duplicate id in the history


def test_a_late_append_during_an_async_run_whose_node_grows_the_history_in_place(monkeypatch: pytest.MonkeyPatch) -> None:
    now = _clock(monkeypatch)
    session, stamps = _session(6, now)

    async def scenario() -> None:
        entered, gate = asyncio.Event(), asyncio.Event()

        async def node(state: Any) -> dict[str, Any]:
            update = _grows_in_place(state)
            entered.set()
            await gate.wait()
            return update

        session.override_node("lite_prune", node)
        task = asyncio.create_task(session.async_resize("lite"))
        await entered.wait()  # the note is in the full history; the run is not committed
        _append(session, HumanMessage(content="late", id="late"), now, stamps)
        assert session.arrived_at.get("late") == stamps["late"]
        gate.set()
        await task

    asyncio.run(scenario())
    assert dict(session.arrived_at) == stamps and session.arrived_at["late"] == stamps["late"]
    _consistent(session)


def test_a_message_measured_while_another_thread_appends_keeps_its_place_and_stamp(monkeypatch: pytest.MonkeyPatch) -> None:
    """Thread A's message is measured (its counter runs user code, which can release the GIL)
    while thread B appends: A lands after B, and is found there, refused again and stamped."""
    now = _clock(monkeypatch)
    entered, gate = threading.Event(), threading.Event()

    def counter(text: str) -> int:
        if "slow" in text:
            entered.set()
            assert gate.wait(10)
        return len(text.split())

    session, stamps = _session(4, now)
    session.set_token_counter(counter)
    failed: list[BaseException] = []

    def slow() -> None:
        try:
            session.append_message(HumanMessage(content="slow to count", id="A"))
        except BaseException as error:  # reported below
            failed.append(error)

    thread = threading.Thread(target=slow)
    thread.start()
    assert entered.wait(10)
    _append(session, HumanMessage(content="quick", id="B"), now, stamps)
    gate.set()
    thread.join(10)
    assert not failed and [m.id for m in session.full_chat_history][-2:] == ["B", "A"]
    assert set(session.arrived_at) == {*stamps, "A"} and session.arrived_at["B"] == stamps["B"]
    assert session.arrived_at["A"] > stamps["B"]
    _consistent(session)


def test_stamps_before_the_epoch_are_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    """A clock before 1970 (a test frozen at a historic date): each stamp is kept and reads as
    ``utc_now`` made it, none taken for a deleted one."""
    now = _clock(monkeypatch)
    now[0] = -3_000_000  # ns: 1969-12-31T23:59:59.997000Z, then a microsecond later per read
    session, stamps = _session(4, now)
    assert stamps["m0"] == "1969-12-31T23:59:59.997001Z" and stamps["m3"] == "1969-12-31T23:59:59.997004Z"
    assert len(session.arrived_at) == 4 and dict(session.arrived_at) == stamps
    assert session.arrived_at["m2"] == stamps["m2"] and "m3" in session.arrived_at


def test_a_stamp_read_from_another_thread_while_the_history_is_replaced(monkeypatch: pytest.MonkeyPatch) -> None:
    """A search thread reads a stamp (``MessageSource`` reads ``arrived_at.get``) while the
    session adopts another history (a restore, a merge on save): the stamps are settled by id
    under the reader, which still gets the message's own stamp (not an IndexError, not another's)."""
    now = _clock(monkeypatch)
    session, stamps = _session(6, now)
    entered, go = threading.Event(), threading.Event()
    read = Ledger.held_position
    main = threading.current_thread()

    def held_position(self: Ledger, message_id: str) -> int | None:
        if threading.current_thread() is not main:  # the reader waits for the restore
            entered.set()
            assert go.wait(10)
        return read(self, message_id)

    monkeypatch.setattr(Ledger, "held_position", held_position)
    got: list[object] = []
    thread = threading.Thread(target=lambda: got.append(_read(session, "m3")))
    thread.start()
    assert entered.wait(10)
    state = session.state
    moved = [*state.full_chat_history[:1], *reversed(state.full_chat_history[1:])]
    session.restore(dataclasses.replace(state, full_chat_history=moved, current_chat_history=list(moved)))
    go.set()
    thread.join(10)
    assert got == [stamps["m3"]]


def _read(session: Session, key: str) -> object:
    try:
        return session.arrived_at.get(key)
    except Exception as error:  # reported by the assertion
        return error


def test_a_message_replaced_in_place_by_a_node_leaves_the_stamps_readable(monkeypatch: pytest.MonkeyPatch) -> None:
    """A replaced node that swaps a message of the full history in place (rule 2 forbids it, the
    checks cannot see an edit of the list they are handed): every key the stamps list can be
    read, so ``dict(arrived_at)`` (a reload merges the stamps so) does not raise."""
    now = _clock(monkeypatch)
    session, stamps = _session(6, now)

    def swaps(state: Any) -> dict[str, Any]:
        state.full_chat_history[2] = HumanMessage(content="swapped", id="swapped")
        return {"current_chat_history": state.current_chat_history[-2:]}

    session.override_node("lite_prune", swaps)
    session.resize(force="lite")
    read = dict(session.arrived_at)
    assert all(read[key] == stamps[key] for key in read) and {"m0", "m1", "m3", "m4", "m5"} <= set(read)
