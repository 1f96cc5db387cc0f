"""A JSONL log edited by hand (a message line removed, one damaged and quarantined, with or
without the meta file) still loads: what is left is the history, and the session saves on.

A record's ``seq`` numbers its position when written. A full read whose numbering had a gap at
its second record was taken for a window read (record 0, then the window), so the history
waited for messages before the "window" that were not there: every load failed, the meta file
deleted or not, with an error that said to load again."""

from __future__ import annotations

import json
from pathlib import Path
import warnings

import pytest

from session_graph.stores import SessionManager


def _stored(root: Path) -> Path:
    with SessionManager(root) as manager:
        session = manager.get_or_create("k")
        for turn in range(3):
            session.append_message({"role": "user", "content": f"q{turn}"})
            session.append_message({"role": "assistant", "content": f"a{turn}"})
        manager.save(session)
    return root / "default" / "k.jsonl"


def _texts(root: Path) -> list[str]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # the quarantine and the meta rebuilt are said: not tested here
        with SessionManager(root) as manager:
            session = manager.get("k")
            assert session is not None
            return [m.text for m in session.full_chat_history]


def _drop_message_field(line: str) -> str:
    return json.dumps({k: v for k, v in json.loads(line).items() if k != "message"})


@pytest.mark.parametrize("edit", ["removed", "damaged"])
@pytest.mark.parametrize("meta", ["kept", "deleted"])
def test_a_log_with_its_second_line_edited_by_hand_loads_and_saves_on(tmp_path: Path, edit: str, meta: str) -> None:
    log = _stored(tmp_path)
    lines = log.read_text().splitlines()
    lines[1:2] = [] if edit == "removed" else [_drop_message_field(lines[1])]  # a0 gone, or no longer a message
    log.write_text("\n".join(lines) + "\n")
    if meta == "deleted":
        (tmp_path / "default" / "k.meta.json").unlink()
    assert _texts(tmp_path) == ["q0", "q1", "a1", "q2", "a2"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        with SessionManager(tmp_path) as manager:
            session = manager.get_or_create("k")
            session.append_message({"role": "user", "content": "after the edit"})
            manager.save(session)
    assert _texts(tmp_path) == ["q0", "q1", "a1", "q2", "a2", "after the edit"]


def test_a_log_saved_with_a_byte_order_mark_keeps_its_first_message(tmp_path: Path) -> None:
    """An editor (Notepad) that saves the log as UTF-8 with a BOM: the first line was taken for a
    damaged one and quarantined, so the session lost its first message."""
    log = _stored(tmp_path)
    log.write_bytes(b"\xef\xbb\xbf" + log.read_bytes())
    assert _texts(tmp_path) == ["q0", "a0", "q1", "a1", "q2", "a2"]
    assert not (tmp_path / "default" / "k.quarantine.jsonl").exists()
    with SessionManager(tmp_path) as manager:
        session = manager.get_or_create("k")
        session.append_message({"role": "user", "content": "after"})
        manager.save(session)
    assert _texts(tmp_path)[-2:] == ["a2", "after"]


@pytest.mark.parametrize("meta", ["kept", "deleted"])
def test_a_message_line_removed_by_hand_is_said_not_loaded_silently(tmp_path: Path, meta: str) -> None:
    """The record numbers skip where the line was: the load names the log and how many messages
    are missing (it loaded a session without them and said nothing, meta file kept or not)."""
    log = _stored(tmp_path)
    lines = log.read_text().splitlines()
    del lines[3]  # a1
    log.write_text("\n".join(lines) + "\n")
    if meta == "deleted":
        (tmp_path / "default" / "k.meta.json").unlink()
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        with SessionManager(tmp_path) as manager:
            session = manager.get("k")
            assert session is not None and [m.text for m in session.full_chat_history] == ["q0", "a0", "q1", "q2", "a2"]
    missing = [str(w.message) for w in said if "by hand" in str(w.message)]
    assert missing and "1 message" in missing[0] and "'k'" in missing[0], [str(w.message) for w in said]


@pytest.mark.parametrize("edit", ["removed", "damaged"])
@pytest.mark.parametrize("meta", ["kept", "deleted"])
def test_a_cached_session_of_an_edited_log_reloads_another_writers_messages_once(tmp_path: Path, edit: str, meta: str) -> None:
    """A record's ``seq`` is where it was written, so a line removed by hand leaves the loaded
    history one shorter than the store's numbering; a cached session reloading what another
    writer added reads the records from ``seq`` = the messages it holds: it got the last one it
    held again (a2 twice in its history, then in its window and its saves), and the stamps
    by position were read for the wrong messages."""
    log = _stored(tmp_path)
    lines = log.read_text().splitlines()
    lines[1:2] = [] if edit == "removed" else [_drop_message_field(lines[1])]
    log.write_text("\n".join(lines) + "\n")
    if meta == "deleted":
        (tmp_path / "default" / "k.meta.json").unlink()
    expected = ["q0", "q1", "a1", "q2", "a2"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        with SessionManager(tmp_path) as first, SessionManager(tmp_path) as second:
            mine = first.get("k")
            assert mine is not None and [m.text for m in mine.full_chat_history] == expected
            theirs = second.get("k")
            assert theirs is not None
            theirs.append_message({"role": "user", "content": "from the other"})
            second.save(theirs)
            mine = first.get("k")  # the cached one, reloaded with what the other writer added
            assert mine is not None
            assert [m.text for m in mine.full_chat_history] == [*expected, "from the other"]
            stamps = {json.loads(line)["id"]: json.loads(line)["ts"] for line in log.read_text().splitlines()
                      if '"message"' in line and "message" in json.loads(line)}
            assert {m.id: mine.arrived_at[m.id or ""] for m in mine.full_chat_history} == {
                m.id: stamps[m.id] for m in mine.full_chat_history}
            mine.append_message({"role": "user", "content": "from me"})
            first.save(mine)
            theirs = second.get("k")
            assert theirs is not None
            assert [m.text for m in theirs.full_chat_history] == [*expected, "from the other", "from me"]
    assert _texts(tmp_path) == [*expected, "from the other", "from me"]


def test_an_edited_log_whose_window_then_moves_still_loads(tmp_path: Path) -> None:
    """A save after a line removed by hand numbers its records by count (seqs now repeat) and
    stores the window's start as a position; a lazy load read the window from that seq, got one
    record too many, and every use of the history then failed (its middle one short) until the
    meta file was deleted. The window read now checks it got the count the state says, else reads all."""
    with SessionManager(tmp_path) as manager:
        session = manager.get_or_create("k")
        for turn in range(10):
            session.append_message({"role": "user", "content": f"q{turn} " + "x" * 50})
            session.append_message({"role": "assistant", "content": f"a{turn} " + "y" * 50})
        manager.save(session)
    log = tmp_path / "default" / "k.jsonl"
    lines = log.read_text().splitlines()
    lines[1:2] = []  # a0 removed by hand
    log.write_text("\n".join(lines) + "\n")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        with SessionManager(tmp_path) as manager:
            session = manager.get("k")
            assert session is not None
            session.configure(limit={"chars": 400})
            session.append_message({"role": "user", "content": "q10"})
            session.resize(force=True)  # the window moves: its start is saved
            assert len(session.current_chat_history) < len(session.full_chat_history)
            manager.save(session)
    texts = _texts(tmp_path)
    assert texts[:3] == ["q0 " + "x" * 50, "q1 " + "x" * 50, "a1 " + "y" * 50] and texts[-1] == "q10" and len(texts) == 20


def test_a_line_removed_just_before_the_window_is_not_taken_for_a_window_read(tmp_path: Path) -> None:
    """The window starts at record 2 and record 1 is removed by hand: the full read (the log no
    longer as its state left it) numbers its second record 2, the window's start, so the load took
    it for a window read and every use of the history failed (its middle one short)."""
    with SessionManager(tmp_path) as manager:
        session = manager.get_or_create("k")
        for turn in range(4):
            session.append_message({"role": "user", "content": f"q{turn}"})
            session.append_message({"role": "assistant", "content": f"a{turn}"})
        session.configure(limit={"messages": 6})
        session.resize(force="lite")
        assert session.current_chat_history[0].text == "q1"  # the window starts at record 2
        manager.save(session)
    log = tmp_path / "default" / "k.jsonl"
    lines = log.read_text().splitlines()
    lines[1:2] = []  # a0 removed by hand
    log.write_text("\n".join(lines) + "\n")
    assert _texts(tmp_path) == ["q0", "q1", "a1", "q2", "a2", "q3", "a3"]
