"""Review of the lines-after-the-state version (stores/jsonl_tail): a version must never alias,
two different store contents reporting one version, or a cached session is served stale."""

from __future__ import annotations

import json
from pathlib import Path
import sqlite3

from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
import pytest
from stores_util import hand_record

from session_graph import SessionManager
from session_graph.stores import JsonlStore, SqliteStore, jsonl_handles
from session_graph.stores.merge import _paired


def test_a_read_only_reader_meeting_a_save_in_flight_is_not_served_stale(tmp_path: Path, monkeypatch) -> None:
    """A read-only store (``create=False``: no lock) that reads while a save's first record is in
    the log and its state line not yet must not give that content the number the save's state
    line gets: its manager would then keep the stale session once the save is done."""
    writer = SessionManager(tmp_path)
    session = writer.get_or_create("k")
    session.append_message(HumanMessage("one", id="m1"))
    writer.save(session)
    reader = SessionManager(JsonlStore(tmp_path, create=False))
    assert reader.get("k") is not None
    seen = []
    real = jsonl_handles.Held.append

    def in_two(self, path, data, inode, sync, size=None):  # the save's first line, a read, then the rest
        cut = data.index(b"\n") + 1
        real(self, path, data[:cut], inode, sync, None)
        seen.append(reader.get("k"))
        return real(self, path, data[cut:], inode, sync, None)

    monkeypatch.setattr(jsonl_handles.Held, "append", in_two)
    session.append_message(HumanMessage("two", id="m2"))
    session.metadata["topic"] = "saved with m2"
    writer.save(session)
    monkeypatch.setattr(jsonl_handles.Held, "append", real)
    assert seen and seen[0] is not None
    fresh = SessionManager(JsonlStore(tmp_path, create=False)).get("k")
    now = reader.get("k")
    assert fresh is not None and fresh.metadata.get("topic") == "saved with m2"
    assert now is not None and now.metadata.get("topic") == "saved with m2"  # not the half-saved read's


def test_a_hand_reset_marker_followed_by_as_many_records_as_held_is_a_clear_for_the_save(tmp_path: Path) -> None:
    """The save's update function must see the reset marker after the state as a clear (its
    ``resets`` moved, as a read's do), not only when the count fell below what the session holds:
    a marker and two records after a two-message session looked like nothing new."""
    manager = SessionManager(tmp_path)
    session = manager.get_or_create("k")
    session.append_message(HumanMessage("one", id="m1"))
    session.append_message(HumanMessage("two", id="m2"))
    manager.save(session)
    log = tmp_path / "default" / "k.jsonl"
    with open(log, "ab") as handle:
        handle.write(b'{"_type": "reset", "ts": "2026-01-01T00:00:00Z"}\n' + hand_record("h0", 0) + hand_record("h1", 1))
    session.append_message(HumanMessage("three", id="m3"))
    manager.save(session)
    stored = SessionManager(tmp_path).get("k")
    assert stored is not None
    for each in (session, stored):
        assert [m.id for m in each.full_chat_history] == ["h0", "h1", "m3"]
        assert [m.id for m in each.current_chat_history] == ["h0", "h1", "m3"]


def test_rows_without_a_session_row_merged_by_the_first_save_keep_its_created_at(tmp_path: Path) -> None:
    """Message rows another tool wrote for a key with no session row: the first save merges them
    (they move the version of its placeholder row) and must still stamp ``created_at``."""
    database = tmp_path / "store.sqlite3"
    store = SqliteStore(database)
    data = json.dumps({"type": "human", "data": {"content": "by hand", "type": "human", "id": "h0"}})
    with sqlite3.connect(database) as connection:
        connection.execute("INSERT INTO sg_messages (tenant, key, seq, id, ts, role, text, data) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                           ("default", "k", 0, "h0", "2026-01-01T00:00:00Z", "user", "by hand", data))
    manager = SessionManager(store)
    session = manager.get_or_create("k")
    session.append_message(HumanMessage("one", id="m1"))
    manager.save(session)
    assert [m.id for m in session.full_chat_history] == ["h0", "m1"]
    (info,) = store.list("default")
    store.close()
    assert info.message_count == 2 and info.created_at != ""


@pytest.mark.parametrize("between", ["another manager's save", "a line by hand"])
def test_a_merge_never_splits_a_tool_call_from_its_result_in_the_window(tmp_path: Path, between: str) -> None:
    manager = SessionManager(tmp_path)
    session = manager.get_or_create("k")
    session.append_message(HumanMessage("question", id="m1"))
    call = {"name": "lookup", "args": {}, "id": "c1", "type": "tool_call"}
    session.append_message(AIMessage("", id="call", tool_calls=[call]))
    manager.save(session)  # a step saved the call; its result comes next
    if between == "a line by hand":
        with open(tmp_path / "default" / "k.jsonl", "ab") as handle:
            handle.write(hand_record("other", 2))
    else:
        other = SessionManager(JsonlStore(tmp_path))
        theirs = other.get("k")
        assert theirs is not None
        theirs.append_message(HumanMessage("text of other", id="other"))
        other.save(theirs)
    session.append_message(ToolMessage("result", id="result", tool_call_id="c1"))
    manager.save(session)
    stored = SessionManager(tmp_path).get("k")
    assert stored is not None
    for each in (session, stored):
        window = [m.id for m in each.current_chat_history]
        assert window.index("result") == window.index("call") + 1, window


def test_a_merged_window_places_each_tool_result_once_when_two_calls_share_its_id() -> None:
    """Two replies calling the same id (a model repeating one): the result follows the first, and is not copied after the second."""
    call = {"id": "x", "name": "lookup", "args": {}}
    window = [HumanMessage("q", id="h"), AIMessage("", tool_calls=[call], id="a1"), AIMessage("", tool_calls=[call], id="a2"),
              ToolMessage("r", tool_call_id="x", id="t1")]
    assert [m.id for m in _paired(window)] == ["h", "a1", "t1", "a2"]


def test_a_merged_window_keeps_a_calls_results_in_their_stored_order() -> None:
    """Results split from their reply's two calls come back right after it, in the order they were stored."""
    calls = [{"id": "c1", "name": "lookup", "args": {}}, {"id": "c2", "name": "lookup", "args": {}}]
    window = [HumanMessage("q", id="h"), AIMessage("", tool_calls=calls, id="a"), HumanMessage("o", id="other"),
              ToolMessage("r2", tool_call_id="c2", id="t2"), ToolMessage("r1", tool_call_id="c1", id="t1")]
    assert [m.id for m in _paired(window)] == ["h", "a", "t2", "t1", "other"]
