"""A JSONL save costs the same at any history size: the log's offsets (one per 1,000 records)
are neither copied pair by pair nor encoded again by a save that adds none, and stay right
across the 1,000th record."""

from __future__ import annotations

import json
from pathlib import Path

from session_graph import SessionManager
from session_graph._base.files import encode_name
from session_graph.stores.jsonl_log import OFFSET_STEP


def test_appended_saves_keep_the_offsets_encoding_until_one_is_added(tmp_path: Path) -> None:
    manager = SessionManager(tmp_path)
    session = manager.get_or_create("k")
    for i in range(OFFSET_STEP - 3):
        session.append_message({"role": "user" if i % 2 == 0 else "assistant", "content": f"m{i}"})
    manager.save(session)
    meta = tmp_path / "default" / (encode_name("k") + ".meta.json")
    encodings = []
    for turn in range(4):  # 997 -> 1005 records: the 1,000th gets an offset on the second save
        session.append_message({"role": "user", "content": f"q{turn}"})
        session.append_message({"role": "assistant", "content": f"a{turn}"})
        manager.save(session)
        encodings.append(manager.store._written.get(meta)[1].fields["offsets"])
    assert encodings[0] is not encodings[1] and encodings[2] is encodings[1] and encodings[3] is encodings[1]
    assert json.loads(encodings[-1]) == [[0, json.loads(encodings[0])[0][1]], json.loads(encodings[-1])[1]]
    manager.close()
    again = SessionManager(tmp_path).get("k")  # a new process reads the window through the offsets
    assert [m.id for m in again.current_chat_history] == [m.id for m in session.current_chat_history]
    assert [m.content for m in again.full_chat_history[OFFSET_STEP - 1 : OFFSET_STEP + 1]] == ["q1", "a1"]
