"""What an append records, now that the ledger refuses a known id and records a new one in one
entry (its measures and position, ``accounting/sizing.Measures``): the stamps, the refusals, the
index and an unmeasurable message's rollback are as before."""

from __future__ import annotations

import time

from langchain_core.messages import AIMessage, HumanMessage
import pytest

from session_graph import Session
from session_graph.errors import MessageError


def _clock(monkeypatch: pytest.MonkeyPatch, start: int) -> list[int]:
    readings: list[int] = []

    def time_ns() -> int:
        readings.append(start + 1_000 * len(readings) + 7)  # one microsecond (and 7 ns) apart
        return readings[-1]

    monkeypatch.setattr(time, "time_ns", time_ns)
    return readings


def test_each_append_is_stamped_with_the_clock_at_its_append(monkeypatch: pytest.MonkeyPatch) -> None:
    readings = _clock(monkeypatch, 1_767_225_599_999_998_000)  # crosses a millisecond, a second, a day, a year
    session = Session()
    for i in range(4):
        session.append_message(HumanMessage(content=f"m{i}", id=f"m{i}"))
    stamps = session.arrived_at
    assert len(readings) == 4 and stamps["m0"] == "2025-12-31T23:59:59.999998Z" and stamps["m3"] == "2026-01-01T00:00:00.000001Z"
    session.append_message(AIMessage(content="later", id="later"))
    assert session.arrived_at is stamps and stamps["later"] == "2026-01-01T00:00:00.000002Z"  # the same dict, kept up to date


def test_setting_the_stamps_replaces_every_earlier_one() -> None:
    session = Session()
    session.append_message(HumanMessage(content="a", id="a"))
    session.arrived_at = {"x": "2026-01-01T00:00:00.000000Z"}  # what a load does: the stored stamps, whole
    assert session.arrived_at == {"x": "2026-01-01T00:00:00.000000Z"}
    session.append_message(HumanMessage(content="b", id="b"))
    assert set(session.arrived_at) == {"x", "b"}


def test_a_refused_duplicate_is_not_stamped_and_changes_nothing() -> None:
    session = Session()
    session.append_message(HumanMessage(content="first", id="same"))
    stamp = session.arrived_at["same"]
    with pytest.raises(MessageError, match="a message with id 'same' is already in session"):
        session.append_message(AIMessage(content="again", id="same"))
    assert session.arrived_at == {"same": stamp}
    assert session._ledger.position("same") == 0 and len(session.full_chat_history) == 1


def test_a_message_that_cannot_be_measured_is_not_registered() -> None:
    failing = True

    def count(text: str) -> int:
        if failing:
            raise RuntimeError("counter down")
        return len(text.split())

    session = Session(token_counter=count)
    with pytest.raises(RuntimeError, match="counter down"):
        session.append_message(HumanMessage(content="one two", id="m1"))
    assert "m1" not in session.arrived_at and session._ledger.position("m1") is None and not session.full_chat_history
    failing = False
    session.append_message(HumanMessage(content="one two", id="m1"))  # the same id is new again
    assert session._ledger.position("m1") == 0 and "m1" in session.arrived_at


def test_messages_without_an_id_are_never_refused_as_duplicates() -> None:
    session = Session()
    ledger = session._ledger
    first, second = HumanMessage(content="a"), HumanMessage(content="b")
    ledger.add(first, 0, session.id)
    ledger.add(second, 1, session.id)  # no id: nothing to refuse, as before
    assert ledger.position("") == 1
