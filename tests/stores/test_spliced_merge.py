"""A merge builds the stored history on the session's own list (``Spliced``), never on a copy of
it: the view reads as ``base[:shared] + tail``, ``adopt`` rearranges the list in place, messages
appended meanwhile stay on top, and a failed install puts the list back as it was."""

from __future__ import annotations

from pathlib import Path
import random

from langchain_core.messages import AIMessage, HumanMessage
import pytest

from session_graph.resize.history import Spliced
from session_graph.stores import JsonlStore, SessionManager, SqliteStore
from session_graph.stores.merge import adopt, merge_snapshot


def _history(count: int, prefix: str) -> list:
    return [(HumanMessage if i % 2 == 0 else AIMessage)(content=f"{prefix} {i}", id=f"{prefix}{i}") for i in range(count)]


@pytest.mark.parametrize("seed", range(40))
def test_a_spliced_history_reads_as_the_shared_part_then_its_tail(seed: int) -> None:
    rng = random.Random(seed)
    base = _history(rng.randint(0, 12), "b")
    shared = rng.randint(0, len(base))
    tail = _history(rng.randint(0, 6), "t")
    view, expected = Spliced(base, shared, list(tail)), [*base[:shared], *tail]
    assert len(view) == len(expected) and list(view) == expected and list(reversed(view)) == expected[::-1]
    for index in range(-len(expected), len(expected)):
        assert view[index] is expected[index]
    for _ in range(30):
        lo, hi, step = rng.randint(-15, 15), rng.randint(-15, 15), rng.choice([None, 1, 2, -1])
        assert view[lo:hi:step] == expected[lo:hi:step]
    with pytest.raises(IndexError):
        view[len(expected)]
    extra = _history(2, "x")
    view.extend(extra[:1])
    view.append(extra[1])
    expected += extra
    settled = view.settle()
    assert settled is base and base == expected  # the base list itself, rearranged in place


def test_a_spliced_history_refuses_a_shared_part_longer_than_its_base() -> None:
    with pytest.raises(ValueError, match="shared must be within"):
        Spliced(_history(2, "b"), 3)


def _two_writers(tmp_path: Path, kind: str, count: int = 1500) -> tuple:
    make = (lambda: JsonlStore(tmp_path / "j", fsync=False)) if kind == "jsonl" else (lambda: SqliteStore(tmp_path / "s.db"))
    mine, other = SessionManager(make()), SessionManager(make())
    session = mine.get_or_create("k")
    session.set_settings("session.resize.every_n_turns", 0)
    for message in _history(count, "s"):
        session.append_message(message)
    mine.save(session)
    theirs = other.get_or_create("k")
    theirs.append_message(HumanMessage(content="theirs", id="o1"))
    other.save(theirs)
    session.append_message(HumanMessage(content="mine", id="n1"))
    return make, mine, session


@pytest.mark.parametrize("kind", ["jsonl", "sqlite"])
def test_a_save_that_merges_keeps_the_sessions_own_list(kind: str, tmp_path: Path) -> None:
    make, mine, session = _two_writers(tmp_path, kind)
    own = session.full_chat_history
    mine.save(session)
    assert mine.merges == 1
    assert session.full_chat_history is own  # rearranged in place, never copied
    expected = [*(f"s{i}" for i in range(1500)), "o1", "n1"]
    assert [m.id for m in own] == expected
    assert all(session._ledger.position(i) == p for p, i in enumerate(expected))
    stored = SessionManager(make()).get("k")
    assert stored is not None and [m.id for m in stored.full_chat_history] == expected


@pytest.mark.parametrize("kind", ["jsonl", "sqlite"])
def test_messages_appended_while_the_store_merged_stay_on_top(kind: str, tmp_path: Path) -> None:
    make, mine, session = _two_writers(tmp_path, kind)
    entry = mine.cache.get("k")
    assert entry is not None
    snapshot = make().read(mine.tenant, "k", since=entry.persisted)
    assert snapshot is not None
    result = merge_snapshot(entry.base, session, snapshot, entry.persisted, entry.persisted)
    count = len(session.full_chat_history)
    session.append_message(HumanMessage(content="late", id="late1"))  # an async turn went on meanwhile
    adopt(session, result, late=session.full_chat_history[count:])
    expected = [*(f"s{i}" for i in range(1500)), "o1", "n1", "late1"]
    assert [m.id for m in session.full_chat_history] == expected
    assert all(session._ledger.position(i) == p for p, i in enumerate(expected))
    assert [m.id for m in session.current_chat_history][-3:] == ["o1", "n1", "late1"]


@pytest.mark.parametrize("kind", ["jsonl", "sqlite"])
def test_a_failed_adopt_puts_the_sessions_list_back(kind: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    make, mine, session = _two_writers(tmp_path, kind)
    entry = mine.cache.get("k")
    assert entry is not None
    own, before = session.full_chat_history, [m.id for m in session.full_chat_history]
    positions = {i: session._ledger.position(i) for i in before}
    snapshot = make().read(mine.tenant, "k", since=entry.persisted)
    assert snapshot is not None
    result = merge_snapshot(entry.base, session, snapshot, entry.persisted, entry.persisted)
    assert [m.id for m in own] == before  # the merge itself changes nothing

    def broken(*args: object, **kwargs: object) -> None:
        raise RuntimeError("the install broke")

    monkeypatch.setattr(session._core, "install", broken)
    with pytest.raises(RuntimeError, match="the install broke"):
        adopt(session, result)
    assert session.full_chat_history is own and [m.id for m in own] == before
    assert {i: session._ledger.position(i) for i in before} == positions
    assert session._ledger.position("o1") is None
