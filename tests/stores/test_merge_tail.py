"""A merge that positions the messages both writers hold by the writer's own index (O(what
changed)) gives exactly what the whole-history merge gives; a ledger that takes over its
predecessor's index re-indexes only what changed, and gives it back when its install fails."""

from __future__ import annotations

import dataclasses
from pathlib import Path
import random

from langchain_core.messages import AIMessage, HumanMessage
import pytest

from session_graph import Session
from session_graph.resize.state import SessionState
from session_graph.settings import SessionSettings
from session_graph.stores import JsonlStore, SessionManager, SqliteStore
from session_graph.stores.merge import merge_states


def _history(count: int, prefix: str) -> list:
    return [(HumanMessage if i % 2 == 0 else AIMessage)(content=f"{prefix} {i}", id=f"{prefix}{i}") for i in range(count)]


def _state(full: list, window: list, memo: dict, cursor: int, ahead: frozenset, turns: int) -> SessionState:
    return SessionState(id="k", full_chat_history=full, current_chat_history=window, memo=memo, settings=SessionSettings({}),
                        turns=turns, memo_cursor=cursor, memo_ahead=ahead)


def _scenario(seed: int) -> tuple[dict, int, SessionState, SessionState, int, dict]:
    rng = random.Random(seed)
    held = _history(rng.randint(3, 40), "h")
    mine_tail, their_tail = _history(rng.randint(0, 6), "m"), _history(rng.randint(0, 6), "t")
    mine_full, theirs_full = [*held, *mine_tail], [*held, *their_tail]
    base_cursor = rng.randint(0, len(held))
    base_window = held[rng.randint(0, len(held) - 1):]
    base = {"window": [m.id for m in base_window], "memo": {"facts": ["a"]}, "turns": 3, "last_resize_turn": 0,
            "memo_cursor": base_cursor}

    def side(full: list, tail: list) -> SessionState:
        window = [m for m in base_window if rng.random() > 0.3] + tail
        if rng.random() < 0.3:
            window.append(HumanMessage(content="inline summary", id=f"inline{seed}{len(full)}"))  # not in the history
        changed = rng.random() < 0.5
        cursor = rng.randint(base_cursor, len(full)) if changed else base_cursor
        ahead = frozenset(m.id for m in full[cursor:] if rng.random() < 0.2) if changed else frozenset()
        if changed and rng.random() < 0.2:
            ahead |= {"gone"}  # folded once, no longer in any history
        memo = {"facts": ["a", f"b{seed}{len(full)}"]} if changed else {"facts": ["a"]}
        return _state(full, window, memo, cursor, ahead, 3 + len(tail))

    mine, theirs = side(mine_full, mine_tail), side(theirs_full, their_tail)
    index = {m.id: i for i, m in enumerate(mine_full)}
    return base, len(held), mine, theirs, len(held), index


@pytest.mark.parametrize("seed", range(300))
def test_tail_merge_equals_the_whole_history_merge(seed: int) -> None:
    base, base_count, mine, theirs, shared, index = _scenario(seed)
    whole, unsaved, dropped, _ = merge_states(base, base_count, mine, theirs)
    tail, unsaved2, dropped2, order = merge_states(base, base_count, mine, theirs, shared, index.get)
    assert [m.id for m in tail.full_chat_history] == [m.id for m in whole.full_chat_history]
    assert [m.id for m in tail.current_chat_history] == [m.id for m in whole.current_chat_history]
    assert (tail.memo, tail.memo_cursor, tail.memo_ahead, tail.turns) == (whole.memo, whole.memo_cursor, whole.memo_ahead, whole.turns)
    assert unsaved2 == unsaved and dropped2 == dropped
    for position, message in enumerate(tail.full_chat_history):
        assert order.get(message.id) == position and message.id in order
    assert order.get("nowhere") is None and "inline-x" not in order


def _session(count: int) -> Session:
    session = Session("k")
    session.set_settings("session.resize.every_n_turns", 0)
    for message in _history(count, "s"):
        session.append_message(message)
    return session


def test_a_ledger_takes_over_the_index_of_a_history_that_grew_after_a_shared_prefix() -> None:
    session = _session(3000)
    state, taken = session.state, session._ledger._index
    grown = dataclasses.replace(state, full_chat_history=[*state.full_chat_history[:2990], *_history(15, "n")],
                                current_chat_history=list(state.current_chat_history[-5:]))
    session.restore(grown)
    assert session._ledger._index is taken  # taken over, not rebuilt
    expected = {m.id: i for i, m in enumerate(grown.full_chat_history)}
    assert all(session._ledger.position(i) == p for i, p in expected.items())
    assert session._ledger.position("s2995") is None  # my old tail is gone from the index


def test_a_failed_install_gives_the_previous_ledger_its_index_back() -> None:
    session = _session(3000)
    before = {m.id: session._ledger.position(m.id) for m in session.full_chat_history}

    def broken(_: object) -> int:
        raise RuntimeError("the counter broke")

    state = session.state
    grown = dataclasses.replace(state, full_chat_history=[*state.full_chat_history[:2990], *_history(15, "n")],
                                current_chat_history=_history(15, "n"))
    session._ledger.size = broken  # measuring the new window fails
    with pytest.raises(RuntimeError, match="the counter broke"):
        session.restore(grown)
    assert {m.id: session._ledger.position(m.id) for m in session.full_chat_history} == before
    assert session._ledger.position("n3") is None


@pytest.mark.parametrize("kind", ["jsonl", "sqlite"])
def test_merges_on_a_long_history_keep_every_message_once_and_the_index_right(kind: str, tmp_path: Path) -> None:
    """Both merge paths (a get that merges, a save that merges) on a history long enough for the
    tail merge and the ledger's take-over: every message stored once, in order, positions right."""
    make = (lambda: JsonlStore(tmp_path / "j", fsync=False)) if kind == "jsonl" else (lambda: SqliteStore(tmp_path / "s.db"))
    mine, other = SessionManager(make()), SessionManager(make())
    session = mine.get_or_create("k")
    session.set_settings("session.resize.every_n_turns", 0)
    for message in _history(2000, "s"):
        session.append_message(message)
    mine.save(session)
    expected = [m.id for m in session.full_chat_history]
    for turn in range(3):
        theirs = other.get_or_create("k")
        theirs.append_message(HumanMessage(content=f"theirs {turn}", id=f"o{turn}"))
        other.save(theirs)
        session.append_message(HumanMessage(content=f"mine {turn}", id=f"n{turn}"))
        if turn == 1:
            assert mine.get_or_create("k") is session  # a get that merges, in place
        mine.save(session)  # a save that merges (or appends after the get merged)
        expected += [f"o{turn}", f"n{turn}"]
        assert [m.id for m in session.full_chat_history] == expected
        assert all(session._ledger.position(i) == p for p, i in enumerate(expected))
    stored = SessionManager(make()).get("k")
    assert stored is not None and [m.id for m in stored.full_chat_history] == expected
    assert mine.merges >= 3
