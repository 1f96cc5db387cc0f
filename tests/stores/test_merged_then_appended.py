"""The merged speed work together: a save that merges builds on the session's own list
(``Spliced``, s25) and later saves append at their cost (t25). What the save records as stored
(its count, its base window) must be what the store holds, not the session's list after
messages appended meanwhile were put on top of it."""

from __future__ import annotations

from pathlib import Path

from langchain_core.messages import AIMessage, HumanMessage
import pytest

from session_graph.stores import JsonlStore, SessionManager, SqliteStore, session_load


def _stores(tmp_path: Path, kind: str):
    if kind == "jsonl":
        return lambda: JsonlStore(tmp_path / "j", fsync=False)
    return lambda: SqliteStore(tmp_path / "s.db")


def _diverged(make):  # type: ignore[no-untyped-def]
    """A manager whose session (10 saved messages, then ``n1``) another writer saved ``o1`` to meanwhile."""
    mine, other = SessionManager(make()), SessionManager(make())
    session = mine.get_or_create("k")
    session.set_settings("session.resize.every_n_turns", 0)
    for i in range(10):
        session.append_message((HumanMessage if i % 2 == 0 else AIMessage)(content=f"m{i}", id=f"s{i}"))
    mine.save(session)
    theirs = other.get_or_create("k")
    theirs.append_message(HumanMessage(content="theirs", id="o1"))
    other.save(theirs)
    session.append_message(HumanMessage(content="mine", id="n1"))
    return mine, session


@pytest.mark.parametrize("kind", ["jsonl", "sqlite"])
def test_a_message_appended_while_a_save_merged_is_saved_by_the_next_save(kind: str, tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    make = _stores(tmp_path, kind)
    mine, session = _diverged(make)
    real = mine.store.update

    def update(*args, **kwargs):  # another task (or thread) appends while the store merges and writes
        version = real(*args, **kwargs)
        session.append_message(AIMessage(content="late", id="late1"))
        return version

    monkeypatch.setattr(mine.store, "update", update)
    mine.save(session)
    monkeypatch.setattr(mine.store, "update", real)
    assert mine.merges == 1
    assert mine.unsaved(session) == 1  # late1 is not stored yet
    mine.save(session)
    stored = SessionManager(make()).get("k")
    assert stored is not None
    expected = [*(f"s{i}" for i in range(10)), "o1", "n1", "late1"]
    assert [m.id for m in session.full_chat_history] == expected
    assert [m.id for m in stored.full_chat_history] == expected
    assert [m.id for m in stored.current_chat_history] == [m.id for m in session.current_chat_history]


@pytest.mark.parametrize("kind", ["jsonl", "sqlite"])
def test_a_message_appended_while_a_load_merged_stays_and_is_saved(kind: str, tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    make = _stores(tmp_path, kind)
    mine, session = _diverged(make)
    real = session_load.merge_with

    def merging(*args, **kwargs):  # the merge runs in a worker thread (aget): the event loop appends meanwhile
        result = real(*args, **kwargs)
        session.append_message(AIMessage(content="late", id="late1"))
        return result

    monkeypatch.setattr(session_load, "merge_with", merging)
    assert mine.get_or_create("k") is session  # the store changed: the load merges
    monkeypatch.setattr(session_load, "merge_with", real)
    expected = [*(f"s{i}" for i in range(10)), "o1", "n1", "late1"]
    assert [m.id for m in session.full_chat_history] == expected
    assert [m.id for m in session.current_chat_history][-3:] == ["o1", "n1", "late1"]
    mine.save(session)
    stored = SessionManager(make()).get("k")
    assert stored is not None and [m.id for m in stored.full_chat_history] == expected
