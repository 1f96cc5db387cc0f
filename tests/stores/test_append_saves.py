"""A save that only appends (``stores/session_append``): it writes the new records and a state
line of what they change, and a reader sees exactly what a full save would have left; anything
else the session did since its last save (a resize, a metadata edit, another writer) is a full
save."""

from __future__ import annotations

import json
from pathlib import Path
import warnings

import pytest

from session_graph import Session, SessionManager
from session_graph._base.files import encode_name
from session_graph.stores import JsonlStore, session_append
from session_graph.stores.jsonl_state import meta_bytes


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
    session.memo["note"] = "kept"  # the memo, in place: it moved the revision, so its state line carries it (an append)
    manager.save(session)
    turn(session, 3)
    assert session.judge_resize() is not None
    session.resize()  # a lite prune: appended too (tests below)
    manager.save(session)
    session.use_lite(messages=8)  # a setting: a full save
    turn(session, 4)
    manager.save(session)
    turn(session, 5)
    manager.save(session)  # appends only again
    assert written == ["update", "update", "append_messages", "append_messages", "update", "append_messages"]
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


def pruned_turns(manager: SessionManager, session: Session, start: int, stop: int) -> int:
    """Turns ``start..stop-1``, each saved, and after each a resize (saved) when the policy asks; how many pruned."""
    pruned = 0
    for i in range(start, stop):
        turn(session, i)
        manager.save(session)
        if session.judge_resize() is not None:
            session.resize()
            manager.save(session)
            pruned += 1
    return pruned


def test_a_lite_prune_is_appended_and_read_back_as_a_full_save_would(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    written = calls(monkeypatch)
    manager = SessionManager(tmp_path)
    session = manager.get_or_create("k").use_lite(messages=6)
    session.metadata["topic"] = "tests"
    assert pruned_turns(manager, session, 0, 8) >= 3
    assert written[0] == "update" and set(written[1:]) == {"append_messages"}  # every prune-save appended
    lines = state_lines(tmp_path)
    prunes = [line["set"] for line in lines[1:] if "last_resize_turn" in line["set"]]
    assert len(prunes) == len(written) - 8 and all(p["window+"][0] > 0 and p["window+"][1] == [] for p in prunes)
    assert all(p["memo"]["last_resize"]["type"] == "lite" and "window_start" in p for p in prunes)
    assert not any("trace" in line["set"] or "settings" in line["set"] for line in lines[1:])
    assert len(session.trace) == len(prunes)
    expected = [m.id for m in session.current_chat_history]
    assert len(expected) == 6 and expected == [m.id for m in session.full_chat_history[-6:]]
    for reader in (SessionManager(tmp_path), SessionManager(tmp_path)):  # a lazy load from the meta file and the log's state lines
        again = reader.get("k")
        same(again, session)
        assert again.state.last_resize_turn == session.state.last_resize_turn
        assert [m.content for m in again.full_chat_history] == [m.content for m in session.full_chat_history]  # the middle paged in
    (tmp_path / "default" / (encode_name("k") + ".meta.json")).unlink()  # and from the log alone
    with pytest.warns(RuntimeWarning):
        rebuilt = SessionManager(tmp_path).get("k")
    same(rebuilt, session)
    assert rebuilt.state.last_resize_turn == session.state.last_resize_turn and rebuilt.memo == session.memo


def test_the_trace_of_appended_prunes_goes_with_the_document_the_store_keeps(tmp_path: Path) -> None:
    manager = SessionManager(tmp_path)
    session = manager.get_or_create("k").use_lite(messages=6)
    pruned = pruned_turns(manager, session, 0, 6)
    meta = tmp_path / "default" / (encode_name("k") + ".meta.json")
    document, written, _ = manager.store._written.get(meta)  # what the next rewrite of the meta file writes
    assert document is not None and written is not None and pruned >= 2
    # a prune's trace records are written with it (its state line's "trace+": another process replays them)
    assert len(document["trace"]["rows"]) == pruned == len(json.loads(meta_bytes(written))["trace"]["rows"])
    assert len(JsonlStore(tmp_path).read("default", "k").state["trace"]["rows"]) == pruned
    assert document["window"] == [m.id for m in session.current_chat_history] == json.loads(written.fields["window"])
    assert document["memo"] == session.memo and document["memo"] is not session.memo  # kept as stored, not shared
    session.memo["edited"] = True  # in place after the save: the next save sees it
    turn(session, 9)
    manager.save(session)
    assert JsonlStore(tmp_path).read("default", "k").state["memo"]["edited"] is True


def test_a_crash_during_an_appended_prune_leaves_the_state_before_it(tmp_path: Path) -> None:
    manager = SessionManager(tmp_path)
    session = manager.get_or_create("k").use_lite(messages=6)
    pruned_turns(manager, session, 0, 3)
    log = tmp_path / "default" / (encode_name("k") + ".jsonl")
    turn(session, 3)
    manager.save(session)
    before = log.read_bytes()
    window = [m.id for m in session.current_chat_history]
    assert session.judge_resize() is not None
    session.resize()
    manager.save(session)  # appended: only a state line
    after = log.read_bytes()
    assert after.startswith(before) and after[len(before):].count(b"\n") == 1
    log.write_bytes(after[: len(before) + (len(after) - len(before)) // 2])  # torn in the middle of the state line
    (tmp_path / "default" / (encode_name("k") + ".meta.json")).unlink()  # a power loss: the meta file not written either
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # the torn line is dropped, with a warning
        stored = SessionManager(tmp_path).get("k")
    assert [m.id for m in stored.current_chat_history] == window
    assert [m.id for m in stored.full_chat_history] == [m.id for m in session.full_chat_history]


def test_a_merge_on_top_of_an_appended_prune_keeps_both_writers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    written = calls(monkeypatch)
    mine, theirs = SessionManager(tmp_path), SessionManager(tmp_path)
    session = mine.get_or_create("k").use_lite(messages=6)
    assert pruned_turns(mine, session, 0, 4) >= 1
    assert "update" not in written[1:]
    other = theirs.get("k")
    same(other, session)
    other.append_message({"role": "user", "content": "from the other writer"})
    theirs.save(other)
    turn(session, 9)
    mine.save(session)  # merged on top of the appended prunes
    stored = SessionManager(tmp_path).get("k")
    contents = [m.content for m in stored.full_chat_history]
    assert contents[:8] == [c for i in range(4) for c in (f"question {i}", f"answer {i}")]
    assert sorted(contents[8:]) == sorted(["from the other writer", "question 9", "answer 9"])
    same(stored, session)
    assert "from the other writer" in [m.content for m in stored.current_chat_history]


def test_a_fold_after_appended_prunes_is_a_full_save(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    written = calls(monkeypatch)
    manager = SessionManager(tmp_path)
    session = manager.get_or_create("k").use_lite(messages=6)
    pruned_turns(manager, session, 0, 4)
    count = len(written)
    session.state.memo_cursor = 2  # as a fold leaves it (the memo's cursor moved): the whole document
    session.resize(force="lite") if session.judge_resize() is None else session.resize()
    manager.save(session)
    assert written[count:] == ["update"]
    assert SessionManager(tmp_path).get("k").state.memo_cursor == 2


def test_saves_in_a_burst_move_the_folder_marker_once_and_a_search_elsewhere_still_sees_them(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import os

    from session_graph.stores import search_index, search_marker

    monkeypatch.setattr(search_index, "_FRESH", 0.0)  # each search checks the files (not only a moment later)
    moved: list[Path] = []
    real = os.utime
    monkeypatch.setattr(os, "utime", lambda path, *a, **k: moved.append(Path(path)) or real(path, *a, **k))
    clock = [1000.0]
    monkeypatch.setattr(search_marker.time, "time", lambda: clock[0])
    mine, theirs = SessionManager(tmp_path), SessionManager(tmp_path)  # two processes
    session = mine.get_or_create("k")
    turn(session, 0)
    mine.save(session)
    assert [h.seq for h in theirs.search("question", 10)] == [0]  # the marker is young: not trusted, a rescan next time
    for i in range(1, 4):  # a burst: within RACY / 4 of the first bump
        clock[0] += search_marker.RACY / 20
        turn(session, i)
        mine.save(session)
    assert moved == [tmp_path / "default"]
    assert sorted(h.seq for h in theirs.search("question", 10)) == [0, 2, 4, 6]  # the other process sees every save
    clock[0] += search_marker.RACY / 4
    turn(session, 4)
    mine.save(session)
    assert moved == [tmp_path / "default"] * 2  # past RACY / 4: moved again


def test_a_window_edited_in_place_is_a_full_save(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    written = calls(monkeypatch)
    manager = SessionManager(tmp_path)
    session = manager.get_or_create("k")
    turn(session, 0)
    manager.save(session)
    session.current_chat_history[1] = session.current_chat_history[0]  # not through the API: no revision change
    turn(session, 1)
    manager.save(session)
    assert written == ["update", "update"]
    stored = JsonlStore(tmp_path).read("default", "k")
    assert stored is not None and stored.state["window"] == [m.id for m in session.current_chat_history]


@pytest.mark.parametrize("lazy", [False, True])
@pytest.mark.parametrize("one_by_one", [False, True])
def test_an_appended_prune_writes_the_window_start_each_message_places(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, lazy: bool, one_by_one: bool) -> None:
    """The window's start in an appended prune's state line is the least position of its kept
    messages, as looking each up gives: found in one look-up when they are the history's messages
    there in order (``session_append._contiguous``), in a lazily loaded session too (no read of its
    middle), and the same when each is looked up (what a window that is not the history's
    messages in order gets)."""
    found: list[int | None] = []
    real = session_append._contiguous
    monkeypatch.setattr(session_append, "_contiguous", lambda *args: found.append(None if one_by_one else real(*args)) or found[-1])
    manager = SessionManager(tmp_path)
    session = manager.get_or_create("k").use_lite(messages=6)
    assert pruned_turns(manager, session, 0, 6) >= 2
    if lazy:
        manager = SessionManager(tmp_path)
        session = manager.get("k")
        assert not session.full_chat_history.loaded  # type: ignore[attr-defined]
    assert pruned_turns(manager, session, 6, 12) >= 2
    if lazy and not one_by_one:
        assert not session.full_chat_history.loaded  # type: ignore[attr-defined]
    window = session.current_chat_history
    least = min(session._ledger.position(m.id) for m in window)
    prunes = [line["set"] for line in state_lines(tmp_path) if "last_resize_turn" in line["set"]]
    assert prunes and prunes[-1]["window_start"] == least == len(session.full_chat_history) - len(window)
    assert any(at is not None for at in found) != one_by_one  # the one look-up taken (the window's last prunes)
    again = SessionManager(tmp_path).get("k")
    assert [m.id for m in again.current_chat_history] == [m.id for m in window]
