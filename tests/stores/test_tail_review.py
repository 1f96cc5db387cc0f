"""Review of the lines-after-the-state version (stores/jsonl_tail): a version must never alias,
two different store contents reporting one version, or a cached session is served stale."""

from __future__ import annotations

from pathlib import Path

from langchain_core.messages import HumanMessage

from session_graph import SessionManager
from session_graph.stores import JsonlStore, jsonl_handles


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
