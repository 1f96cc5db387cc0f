"""One record per appended message: the ledger reads an appended message's position from its
measures' entry (``Measures``: message, chars, tokens, position) instead of a second id-keyed
index. These pin that the position is never trusted when it went stale, and never lost: under a
counter swap (new entries), an edited copy measured under the same id, a restore to another
history, a pruning resize, and a ledger that takes the index over."""

from __future__ import annotations

import dataclasses

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
import pytest

from session_graph import Session
from session_graph.errors import MessageError


def _session(count: int, prefix: str = "m") -> Session:
    session = Session("k")
    session.set_settings("session.resize.every_n_turns", 0)
    for i in range(count):
        kind = HumanMessage if i % 2 == 0 else AIMessage
        session.append_message(kind(content=f"message {i} " + "word " * (i % 7), id=f"{prefix}{i}"))
    return session


def _positions_right(session: Session) -> None:
    ledger = session._ledger
    for position, message in enumerate(session.full_chat_history):
        assert ledger.position(message.id or "") == position
        assert message in session
        with pytest.raises(MessageError, match="already in session"):
            session.append_message(HumanMessage(content="again", id=message.id))


def test_appended_messages_are_found_without_an_index_entry_each() -> None:
    session = _session(40)
    assert session._ledger._index == {}  # one record per message: its position is in its measures' entry
    assert len(session._ledger.measures) == 40
    _positions_right(session)
    assert session._ledger.position("unknown") is None and HumanMessage(content="x", id="unknown") not in session
    assert len(session.full_chat_history) == 40  # every refused duplicate changed nothing


def test_a_counter_swap_indexes_the_appended_positions_before_dropping_the_entries() -> None:
    session = _session(30)
    old = session._ledger.measures
    session.set_token_counter(lambda text: len(text.split()))
    assert session._ledger.measures is not old  # new entries, without positions
    assert len(session._ledger._index) == 30
    _positions_right(session)
    session.append_message(HumanMessage(content="after the swap", id="late"))
    assert session._ledger.position("late") == 30
    session.set_token_counter(None)  # and back: the late one is indexed too
    _positions_right(session)


def test_an_edited_copy_measured_under_the_same_id_keeps_the_id_found() -> None:
    session = _session(10)
    ledger = session._ledger
    original = session.full_chat_history[4]
    copy = original.model_copy(update={"content": "an edited copy, longer than the original text"})
    size = ledger.size(original)
    assert ledger.size(copy) > size  # measured afresh: the entry now holds the copy
    assert ledger.measures.entries[original.id][0] is copy
    assert ledger.position(original.id) == 4  # the position is the id's
    _positions_right(session)


def test_a_restore_to_another_history_leaves_no_stale_position_trusted() -> None:
    session = _session(12)
    state = session.state
    shorter = dataclasses.replace(state, full_chat_history=list(state.full_chat_history[:5]),
                                  current_chat_history=list(state.current_chat_history[:5]))
    session.restore(shorter)
    ledger = session._ledger
    assert ledger.measures.entries["m9"][3] == 9  # the old entry (its objects shared) still says 9
    assert ledger.position("m9") is None and ledger.position("m5") is None
    for i in range(5, 12):  # other ids at the positions the old entries name
        session.append_message(HumanMessage(content=f"other {i}", id=f"x{i}"))
    assert ledger.position("m9") is None and HumanMessage(content="m9", id="m9") not in session
    for i in range(5, 12):  # the dropped ids are new again
        session.append_message(HumanMessage(content=f"new {i}", id=f"m{i}"))
    assert ledger.position("m9") == 16
    _positions_right(session)
    reordered: list[BaseMessage] = [*session.full_chat_history[:5], *reversed(session.full_chat_history[5:])]
    session.restore(dataclasses.replace(session.state, full_chat_history=reordered, current_chat_history=list(reordered)))
    _positions_right(session)  # every position moved: found where it is now, not where it was appended


def test_a_ledger_that_takes_the_index_over_indexes_the_appended_tail_first() -> None:
    session = _session(1_200)
    state = session.state
    grown = dataclasses.replace(state, full_chat_history=[*state.full_chat_history[:1_150], *_session(20, "n").full_chat_history],
                                current_chat_history=list(state.current_chat_history[-5:]))
    session.restore(grown)
    ledger = session._ledger
    assert ledger.position("m1149") == 1_149 and ledger.position("n3") == 1_153
    assert ledger.position("m1150") is None and ledger.position("m1199") is None  # my old tail is gone
    session.append_message(HumanMessage(content="after", id="m1199"))  # an id of the dropped tail is new again
    assert ledger.position("m1199") == 1_170


def test_a_pruning_resize_keeps_every_position() -> None:
    session = _session(60)
    session.set_settings("session.resize.max_keep_messages_count", 20)
    session.resize(force="lite")
    assert len(session.current_chat_history) < 60
    _positions_right(session)
