"""A save that only appends (``stores/session_append``): it writes the new records and a state
line of what they change, and a reader sees exactly what a full save would have left; anything
else the session did since its last save (a resize, a metadata edit, another writer) is a full
save."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from session_graph import Session, SessionManager
from session_graph._base.files import encode_name
from session_graph.stores import JsonlStore


def state_lines(root: Path, key: str = "k") -> list[dict]:
    log = root / "default" / (encode_name(key) + ".jsonl")
    return [json.loads(line) for line in log.read_bytes().splitlines() if line.startswith(b'{"_type": "state"')]


def calls(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Which store method wrote each save (``append_messages`` or ``update``)."""
    seen: list[str] = []
    for name in ("append_messages", "update"):
        real = getattr(JsonlStore, name)

        def counted(self, *args, _real=real, _name=name, **kwargs):
            result = _real(self, *args, **kwargs)
            if result is not None:
                seen.append(_name)
            return result

        monkeypatch.setattr(JsonlStore, name, counted)
    return seen


def turn(session: Session, i: int) -> None:
    session.append_message({"role": "user", "content": f"question {i}"})
    session.append_message({"role": "assistant", "content": f"answer {i}"})


def same(a: Session, b: Session) -> None:
    assert [m.id for m in a.full_chat_history] == [m.id for m in b.full_chat_history]
    assert [m.id for m in a.current_chat_history] == [m.id for m in b.current_chat_history]
    assert a.state.turns == b.state.turns and a.metadata == b.metadata and a.memo == b.memo


def test_appends_are_written_at_their_cost_and_read_back_as_a_full_save_would(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    written = calls(monkeypatch)
    manager = SessionManager(tmp_path)
    session = manager.get_or_create("k")
    session.metadata["topic"] = "tests"
    turn(session, 0)
    manager.save(session)  # new: a full save
    for i in range(1, 4):
        turn(session, i)
        manager.save(session, durable=i % 2 == 0)
    assert written == ["update", "append_messages", "append_messages", "append_messages"]
    lines = state_lines(tmp_path)
    assert [line["full"] for line in lines] == [True, False, False, False]
    for line, i in zip(lines[1:], range(1, 4), strict=True):
        assert set(line["set"]) == {"window+", "message_count", "version", "turns", "updated_at"}
        assert line["set"]["window+"] == [0, [m.id for m in session.full_chat_history[2 * i : 2 * i + 2]]]
        assert line["set"]["message_count"] == 2 * i + 2 and line["set"]["turns"] == i + 1
    again = SessionManager(tmp_path).get("k")  # another process, from the meta file and the log's state lines
    same(again, session)
    meta = tmp_path / "default" / (encode_name("k") + ".meta.json")
    meta.unlink()  # and from the log alone
    with pytest.warns(RuntimeWarning):
        rebuilt = SessionManager(tmp_path).get("k")
    same(rebuilt, session)


def test_anything_but_appends_is_a_full_save(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    written = calls(monkeypatch)
    manager = SessionManager(tmp_path)
    session = manager.get_or_create("k").use_lite(messages=6)
    turn(session, 0)
    manager.save(session)
    turn(session, 1)
    session.metadata["edited"] = True  # in place, no touch(): the stored metadata differs, so a full save carries it
    manager.save(session)
    turn(session, 2)
    session.memo["note"] = "kept"  # the memo, in place: the same
    manager.save(session)
    turn(session, 3)
    assert session.judge_resize() is not None
    session.resize()  # a resize: the window lost messages, the trace grew
    manager.save(session)
    turn(session, 4)
    manager.save(session)  # appends only again
    assert written == ["update", "update", "update", "update", "append_messages"]
    lines = state_lines(tmp_path)
    assert lines[1]["set"]["metadata"] == {"edited": True} and lines[2]["set"]["memo"] == {"note": "kept"}
    same(SessionManager(tmp_path).get("k"), session)


def test_another_writer_in_between_makes_the_append_a_merge(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    written = calls(monkeypatch)
    mine, theirs = SessionManager(tmp_path), SessionManager(tmp_path)  # two processes
    session = mine.get_or_create("k")
    turn(session, 0)
    mine.save(session)
    other = theirs.get("k")
    other.append_message({"role": "user", "content": "from the other writer"})
    theirs.save(other)
    turn(session, 1)
    mine.save(session)  # the store did not write the newest state here: no append, a merge
    assert written == ["update", "update", "update"]
    stored = SessionManager(tmp_path).get("k")
    contents = [m.content for m in stored.full_chat_history]
    assert sorted(contents) == sorted(["question 0", "answer 0", "from the other writer", "question 1", "answer 1"])
    assert len(stored.current_chat_history) == 5


def test_a_merge_after_appended_saves_keeps_both_writers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    written = calls(monkeypatch)
    mine, theirs = SessionManager(tmp_path), SessionManager(tmp_path)
    session = mine.get_or_create("k")
    turn(session, 0)
    mine.save(session)
    turn(session, 1)
    mine.save(session)  # appended: what the manager remembers of the stored state is grown, not rebuilt
    other = theirs.get("k")
    assert len(other.full_chat_history) == 4
    other.append_message({"role": "user", "content": "from the other writer"})
    theirs.save(other)
    turn(session, 2)
    mine.save(session)  # merged on top of the appended state
    assert written == ["update", "append_messages", "update", "update"]  # theirs: its store did not write last
    stored = SessionManager(tmp_path).get("k")
    contents = [m.content for m in stored.full_chat_history]
    assert contents[:4] == ["question 0", "answer 0", "question 1", "answer 1"]
    assert sorted(contents[4:]) == sorted(["from the other writer", "question 2", "answer 2"])
    assert [m.id for m in stored.current_chat_history] == [m.id for m in stored.full_chat_history]
    same(stored, session)
