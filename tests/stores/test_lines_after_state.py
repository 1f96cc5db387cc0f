"""Lines after a JSONL log's last state line (appended behind the store's back: by hand, by
another tool writing the store's record format, or left by a crash or an older version) reach
the live session of a manager that saved before them, and its window, exactly once and in log
order, as another writer's save does: a later load gives the same history and window.

The store's version is the state's plus those lines (``stores/jsonl_tail``), so a save's
staleness check sees them; before, the save took the store as unchanged and wrote its state
over them: the lines were in a reload's history but not in its window, nor in the live session.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
import subprocess
import sys
from typing import Any
import warnings

from langchain_core.messages import AIMessage, HumanMessage
import pytest
from stores_util import hand_record

from session_graph import Session, SessionManager
from session_graph.cli import main
from session_graph.resize.history import is_loaded
from session_graph.stores import JsonlStore, jsonl_handles


def saved(root: Path) -> tuple[SessionManager, Session, Path]:
    manager = SessionManager(root)
    session = manager.get_or_create("k")
    session.append_message(HumanMessage("one", id="m1"))
    session.append_message(AIMessage("two", id="m2"))
    manager.save(session)
    return manager, session, root / "default" / "k.jsonl"


def by_hand(log: Path, data: bytes) -> None:
    with open(log, "ab") as handle:
        handle.write(data)


def ids(messages: list) -> list[str | None]:
    return [m.id for m in messages]


def reloaded(root: Path) -> Session:
    session = SessionManager(root).get("k")
    assert session is not None
    return session


def same(live: Session, root: Path, history: list[str], window: list[str] | None = None) -> None:
    """The live session, and a fresh load of what the store holds, both have this history and window."""
    stored = reloaded(root)
    for session in (live, stored):
        assert ids(session.full_chat_history) == history
        assert ids(session.current_chat_history) == (history if window is None else window)


def saves_three(manager: SessionManager, session: Session, root: Path, history: list[str]) -> None:
    """My next message (``m3``) saved: the live session and a fresh load then hold ``history``."""
    session.append_message(HumanMessage("three", id="m3"))
    manager.save(session)
    same(session, root, history)


@pytest.mark.parametrize("lines", [1, 2])
def test_hand_lines_reach_the_live_session_and_its_window_once(tmp_path: Path, lines: int) -> None:
    manager, session, log = saved(tmp_path)
    hand = [f"hand{i}" for i in range(lines)]
    by_hand(log, b"".join(hand_record(h, 2 + i) for i, h in enumerate(hand)))
    assert manager.store.version("default", "k") == 1 + lines  # every line after the state moves the version
    saves_three(manager, session, tmp_path, ["m1", "m2", *hand, "m3"])
    session.append_message(HumanMessage("four", id="m4"))
    manager.save(session)  # merged once: the next save (appended) neither repeats nor loses them
    same(session, tmp_path, ["m1", "m2", *hand, "m3", "m4"])


def test_the_version_moves_with_each_line_and_a_later_state_line_is_above_it(tmp_path: Path) -> None:
    manager, session, log = saved(tmp_path)
    other = JsonlStore(tmp_path)  # another process's store: no cache of what this one wrote
    seen = [(manager.store.version("default", "k"), other.version("default", "k"))]
    for i in range(2):
        by_hand(log, hand_record(f"hand{i}", 2 + i))
        seen.append((manager.store.version("default", "k"), other.version("default", "k")))
    assert seen == [(1, 1), (2, 2), (3, 3)]
    assert other.read("default", "k").version == 3 and other.read("default", "k", window=True).version == 3
    session.append_message(HumanMessage("three", id="m3"))
    manager.save(session)
    assert manager.store.version("default", "k") == other.version("default", "k") == 4  # never a number a log showed before


def test_a_torn_hand_line_is_cut_with_a_warning_and_the_save_goes_on(tmp_path: Path) -> None:
    manager, session, log = saved(tmp_path)
    size = log.stat().st_size
    by_hand(log, hand_record("torn", 2)[:40])  # no newline: a write cut short
    assert manager.store.version("default", "k") == 1  # a torn line is no line: nothing to merge
    session.append_message(HumanMessage("three", id="m3"))
    with pytest.warns(RuntimeWarning, match="torn last line"):
        manager.save(session)
    assert b"torn" not in log.read_bytes()[size:]
    same(session, tmp_path, ["m1", "m2", "m3"])


def test_a_hand_reset_marker_is_merged_as_another_writers_clear(tmp_path: Path) -> None:
    manager, session, log = saved(tmp_path)
    by_hand(log, b'{"_type": "reset", "ts": "2026-01-01T00:00:00Z"}\n')
    assert manager.list_sessions()[0].message_count == 0 and manager.store.version("default", "k") == 2
    saves_three(manager, session, tmp_path, ["m3"])
    # as another writer's clear (a save of a cleared session) leaves a session that saves after it
    other, cleared, _ = saved(tmp_path / "other")
    writer = SessionManager(tmp_path / "other")
    theirs = writer.get_or_create("k")
    theirs.clear()
    writer.save(theirs)
    cleared.append_message(HumanMessage("three", id="m3"))
    other.save(cleared)
    assert ids(cleared.full_chat_history) == ids(session.full_chat_history) == ["m3"]
    session.append_message(HumanMessage("four", id="m4"))
    manager.save(session)
    same(session, tmp_path, ["m3", "m4"])


@pytest.mark.parametrize("loaded", ["before the line", "after the line"])
def test_a_hand_line_then_another_manager_saving(tmp_path: Path, loaded: str) -> None:
    manager, session, log = saved(tmp_path)
    if loaded == "before the line":
        writer = SessionManager(tmp_path)
        theirs = writer.get("k")
        by_hand(log, hand_record("hand", 2))
    else:
        by_hand(log, hand_record("hand", 2))
        writer = SessionManager(tmp_path)
        theirs = writer.get("k")
    assert theirs is not None
    theirs.append_message(HumanMessage("theirs", id="b1"))
    writer.save(theirs)
    assert ids(theirs.current_chat_history) == ["m1", "m2", "hand", "b1"]
    saves_three(manager, session, tmp_path, ["m1", "m2", "hand", "b1", "m3"])


def test_a_hand_line_then_another_process_saving(tmp_path: Path) -> None:
    manager, session, log = saved(tmp_path)
    by_hand(log, hand_record("hand", 2))
    script = ("import sys; from session_graph import SessionManager; from langchain_core.messages import HumanMessage\n"
              "m = SessionManager(sys.argv[1]); s = m.get('k'); s.append_message(HumanMessage('theirs', id='b1')); m.save(s)\n")
    subprocess.run([sys.executable, "-c", script, str(tmp_path)], check=True, cwd=Path(__file__).parents[2], timeout=120)
    saves_three(manager, session, tmp_path, ["m1", "m2", "hand", "b1", "m3"])


def test_an_async_save_merges_the_hand_line(tmp_path: Path) -> None:
    manager, session, log = saved(tmp_path)
    by_hand(log, hand_record("hand", 2))

    async def save() -> None:
        session.append_message(HumanMessage("three", id="m3"))
        await manager.asave(session)

    asyncio.run(save())
    same(session, tmp_path, ["m1", "m2", "hand", "m3"])


def pruned(root: Path) -> tuple[list[str | None], list[str | None]]:
    """A session whose window starts deep in its history (a later load reads the window only)."""
    manager = SessionManager(root)
    session = manager.get_or_create("k").use_lite(messages=6)
    for i in range(12):
        session.append_message(HumanMessage(f"q{i}", id=f"q{i}"))
        session.append_message(AIMessage(f"a{i}", id=f"a{i}"))
        manager.save(session)
        if session.judge_resize() is not None:
            session.resize()
            manager.save(session)
    assert len(session.current_chat_history) < len(session.full_chat_history) - 2
    return ids(session.full_chat_history), ids(session.current_chat_history)


@pytest.mark.parametrize("when", ["after the lazy load", "before the load"])
def test_a_lazily_loaded_session_merges_the_hand_line(tmp_path: Path, when: str) -> None:
    history, window = pruned(tmp_path)
    log = tmp_path / "default" / "k.jsonl"
    if when == "before the load":
        by_hand(log, hand_record("hand", len(history)))
    manager = SessionManager(tmp_path)
    session = manager.get("k")
    assert session is not None
    if when == "after the lazy load":
        assert not is_loaded(session.full_chat_history)  # the window read: the middle stays in the store
        by_hand(log, hand_record("hand", len(history)))
    session.append_message(HumanMessage("mine", id="mine"))
    manager.save(session)
    expected = [*history, "hand", "mine"]
    assert ids(session.full_chat_history) == expected and ids(reloaded(tmp_path).full_chat_history) == expected
    assert ids(session.current_chat_history) == ids(reloaded(tmp_path).current_chat_history)
    assert ids(session.current_chat_history)[-2:] == ["hand", "mine"] and ids(session.current_chat_history)[0] == window[0]


def test_list_and_the_cli_count_the_lines_after_the_state(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    manager, _, log = saved(tmp_path)
    by_hand(log, hand_record("hand0", 2) + hand_record("hand1", 3))
    assert [info.message_count for info in manager.list_sessions()] == [4]
    assert [info.message_count for info in JsonlStore(tmp_path).list("default")] == [4]
    code, out = main(["sessions", "list", "--json", "--store", str(tmp_path)]), capsys.readouterr().out
    assert code == 0 and [row["message_count"] for row in json.loads(out)] == [4]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # nothing to recover: whole lines of records
        assert len(reloaded(tmp_path).full_chat_history) == 4


def test_lines_after_the_state_are_counted_in_under_the_sessions_lock(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A lock-free read could meet a save in flight (its records written, its state line not yet):
    lines after the state are counted only under the lock, where they are no save's, so the version
    a reader takes is never one a save's state line gets too."""
    _, _, log = saved(tmp_path)
    store = JsonlStore(tmp_path)
    taken: list[str] = []
    real = store._holding
    monkeypatch.setattr(store, "_holding", lambda tenant, key: taken.append(key) or real(tenant, key))
    assert store.version("default", "k") == 1 and store.read("default", "k").version == 1 and taken == []
    by_hand(log, hand_record("hand", 2))
    assert store.version("default", "k") == 2 and taken == ["k"]
    assert store.read("default", "k").version == 2 and taken == ["k", "k"]
    assert store.read("default", "k", window=True).version == 2 and taken == ["k", "k", "k"]


def test_a_save_cut_short_by_a_full_disk_is_saved_again_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A write cut short (its records whole, its state line torn) leaves records after the state:
    the same manager's next save merges them by id with its own unsaved copies, never twice."""
    manager, session, _ = saved(tmp_path)
    session.append_message(HumanMessage("three", id="m3"))
    session.append_message(AIMessage("four", id="m4"))
    real = jsonl_handles.os.write

    def short(fd: int, data: Any) -> int:
        end = bytes(data).index(b'{"_type": "state"') + 10  # the records whole, the state line cut
        real(fd, bytes(data)[:end])
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(jsonl_handles.os, "write", short)
    with pytest.raises(Exception, match="No space left"):
        manager.save(session)
    monkeypatch.setattr(jsonl_handles.os, "write", real)
    with pytest.warns(RuntimeWarning, match="torn last line"):
        manager.save(session)
    same(session, tmp_path, ["m1", "m2", "m3", "m4"])
