"""A save that appends reads the session's revision once: each read encodes the memo and the
metadata to see an edit made in place (``_base/edits``), so with a big memo every extra read is
paid on each of a turn's saves."""

from __future__ import annotations

from pathlib import Path

from langchain_core.messages import AIMessage, HumanMessage
import pytest

from session_graph import SessionManager
import session_graph._base.edits as edits


@pytest.mark.parametrize("store", ["jsonl", "sqlite"])
def test_an_appending_save_encodes_the_memo_and_metadata_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, store: str) -> None:
    manager = SessionManager(tmp_path if store == "jsonl" else tmp_path / "s.db")
    session = manager.get_or_create("k")
    session.memo["facts"] = [f"fact {i}" for i in range(100)]
    session.append_message(HumanMessage(content="hi", id="h1"))
    manager.save(session)
    encoded: list[object] = []
    real = edits.fingerprint
    monkeypatch.setattr(edits, "fingerprint", lambda value: encoded.append(value) or real(value))
    session.append_message(AIMessage(content="hello", id="a1"))
    session.memo["facts"].append("new")  # an edit in place rides on the append
    manager.save(session)
    assert len(encoded) == 2  # the memo and the metadata, once
    again = SessionManager(tmp_path if store == "jsonl" else tmp_path / "s.db").get("k")
    assert [m.id for m in again.full_chat_history] == ["h1", "a1"] and again.memo["facts"][-1] == "new"
