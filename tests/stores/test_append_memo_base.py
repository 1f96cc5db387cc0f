"""After an appended save (``stores/session_append``, a lite prune carried in its state line), the
manager's remembered document (``Entry.base``) holds a copy of the memo it wrote, never the
session's own object: a later edit of the memo in place is still seen as an edit
(``integrations.pruned.edited_since_save``, so a step writes it rather than deferring) and kept
by a merge with another writer."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from session_graph import SessionManager
from session_graph.integrations.pruned import edited_since_save


def test_an_in_place_memo_edit_after_an_appended_prune_is_an_edit(tmp_path: Path) -> None:
    manager = SessionManager(tmp_path)
    session = manager.get_or_create("k").use_lite(messages=6)
    written: list[str] = []
    real = manager.store.append_messages

    def appending(*args: Any, **kwargs: Any) -> int | None:
        version = real(*args, **kwargs)
        if version is not None:
            written.append("append")
        return version

    manager.store.append_messages = appending
    pruned = 0
    for i in range(8):
        session.append_message({"role": "user", "content": f"q{i}"})
        session.append_message({"role": "assistant", "content": f"a{i}"})
        manager.save(session)
        if session.judge_resize() is not None:
            session.resize()
            written.clear()
            manager.save(session)
            pruned += 1
    assert pruned and written == ["append"]  # the last save: an appended prune, its memo note in the state line
    entry = manager.cache.get("k")
    assert entry.base["memo"] is not session.memo and entry.base["memo"] == session.memo
    assert not edited_since_save(manager, session)
    session.memo["fact"] = "edited in place"
    assert edited_since_save(manager, session)
    other = SessionManager(tmp_path)
    theirs = other.get("k")
    theirs.append_message({"role": "user", "content": "from the other writer"})
    other.save(theirs)
    manager.save(session)  # merged: my in-place edit is a change since the base, kept
    assert SessionManager(tmp_path).get("k").memo["fact"] == "edited in place"
