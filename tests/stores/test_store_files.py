"""Backend-specific guarantees: JSONL files (names, torn and corrupt lines), SQL paths and DSNs."""

from __future__ import annotations

import json
import os
from pathlib import Path
import re
import sqlite3

from conftest import chat
import pytest

from session_graph import Session, StoreError
from session_graph._base.files import decode_name, encode_name
from session_graph.stores import JsonlStore, PostgresStore, SessionManager, SqliteStore


@pytest.mark.parametrize("key", ["a_b:c", "a:b_c", "A", "a", "用户:42", "x.y", "%41", "slack/T1"])
def test_file_names_are_reversible(key: str) -> None:
    name = encode_name(key)
    assert decode_name(name) == key
    assert "/" not in name and not name.startswith(".")
    plain = re.sub(r"%[0-9A-F]{2}", "", name)
    assert plain == plain.lower()  # capitals are escaped: no clash on case-insensitive file systems


def test_file_names_never_collide() -> None:
    keys = ["a_b:c", "a:b_c", "A", "a", "%41", "a%3Ab_c", "a b", "a+b"]
    assert len({encode_name(k) for k in keys}) == len(keys)
    assert len({encode_name(k).lower() for k in keys}) == len(keys)  # also on case-insensitive file systems
    long = "k" * 250
    assert encode_name(long).startswith("~") and decode_name(encode_name(long)) is None


def saved(tmp_path: Path, turns: int = 3) -> tuple[SessionManager, Session, Path]:
    manager = SessionManager(tmp_path)
    session = chat(manager.get_or_create("chat:1"), turns)
    manager.save(session)
    return manager, session, tmp_path / "default" / (encode_name("chat:1") + ".jsonl")


def test_a_torn_last_line_is_dropped_with_a_warning_and_never_corrupts_the_next_write(tmp_path: Path) -> None:
    manager, session, log = saved(tmp_path)
    with open(log, "ab") as handle:
        handle.write(b'{"seq": 6, "id": "torn", "ts": "2026')  # a crash mid-write
    with pytest.warns(RuntimeWarning, match="torn last line"):
        loaded = SessionManager(tmp_path).get_or_create("chat:1")
    assert len(loaded.full_chat_history) == 6
    chat(session, 1, start=9)
    with pytest.warns(RuntimeWarning, match="torn last line"):
        manager.save(session)
    lines = log.read_bytes().splitlines()
    assert all(json.loads(line) for line in lines)
    assert len([line for line in lines if not line.startswith(b'{"_type": "state"')]) == 8  # messages; the rest: state lines
    assert [m.content[:2] for m in SessionManager(tmp_path).get_or_create("chat:1").full_chat_history][-2:] == ["u9", "a9"]


def test_a_corrupt_middle_line_is_quarantined_not_the_reason_to_load_empty(tmp_path: Path) -> None:
    _, _, log = saved(tmp_path)
    lines = log.read_bytes().splitlines(keepends=True)
    lines[2] = b'{"seq": 2, "this is not json\n'
    log.write_bytes(b"".join(lines))
    with pytest.warns(RuntimeWarning, match="1 corrupt line"), pytest.warns(RuntimeWarning, match="1 message .* is missing"):
        loaded = SessionManager(tmp_path).get_or_create("chat:1")  # and the message it held is missing: said too
    assert [m.content[:2] for m in loaded.full_chat_history] == ["u0", "a0", "a1", "u2", "a2"]
    quarantine = log.with_name(log.name.replace(".jsonl", ".quarantine.jsonl"))
    assert json.loads(quarantine.read_text())["line"] == 2
    assert log.read_bytes().splitlines(keepends=True)[2] == b'{"seq": 2, "this is not json\n'  # untouched
    with pytest.warns(RuntimeWarning):
        SessionManager(tmp_path).get_or_create("chat:1")
    assert len(quarantine.read_text().splitlines()) == 1  # quarantined once


def test_messages_written_after_the_state_are_kept(tmp_path: Path) -> None:
    _, _, log = saved(tmp_path)
    extra = Session("x")
    chat(extra, 1, start=5)
    with open(log, "a") as handle:  # appended, then the process died before the meta file was replaced
        for seq, message in enumerate(extra.full_chat_history, 6):
            handle.write(json.dumps({"seq": seq, "id": message.id, "ts": "2026-11-22T00:00:00Z", "role": "user",
                                     "message": {"type": message.type, "data": message.model_dump()}}) + "\n")
    loaded = SessionManager(tmp_path).get_or_create("chat:1")
    assert [m.content[:2] for m in loaded.full_chat_history][-2:] == ["u5", "a5"]
    assert loaded.current_chat_history[-1].content.startswith("a5") and loaded.turns == 4


def test_saving_a_turn_appends_and_never_rewrites(tmp_path: Path) -> None:
    manager, session, log = saved(tmp_path)
    before = log.read_bytes()
    inode = log.stat().st_ino
    chat(session, 1, start=3)
    manager.save(session)
    assert log.read_bytes().startswith(before) and log.stat().st_ino == inode


def test_a_lost_meta_file_still_loads_the_messages(tmp_path: Path) -> None:
    _, _, log = saved(tmp_path)
    log.with_name(log.name.replace(".jsonl", ".meta.json")).unlink()
    with pytest.warns(RuntimeWarning, match="is missing"):
        loaded = SessionManager(tmp_path).get("chat:1")
    assert loaded is not None and len(loaded.full_chat_history) == 6


def test_store_paths_that_cannot_work_fail_clearly(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    a_file = tmp_path / "file"
    a_file.write_text("x")
    with pytest.raises(StoreError, match="is a file; a JSONL store needs a directory"):
        JsonlStore(a_file)
    with pytest.raises(StoreError, match="cannot create the store directory"):
        JsonlStore(a_file / "below")
    monkeypatch.setattr(os, "access", lambda *args, **kwargs: False)
    with pytest.raises(StoreError, match="no permission"):
        JsonlStore(tmp_path / "ro")
    monkeypatch.undo()
    with pytest.raises(StoreError, match="is a directory; a SQLite store needs a file"):
        SqliteStore(tmp_path)
    assert a_file.read_text() == "x"


def test_a_corrupt_meta_file_is_rebuilt_from_the_logs_state_lines(tmp_path: Path) -> None:
    manager, session, log = saved(tmp_path)
    session.metadata["topic"] = "kept"
    manager.save(chat(session.touch(), 2, start=3))  # saves after the first write only what changed
    manager.save(chat(session, 1, start=5))
    meta = log.with_name(log.name.replace(".jsonl", ".meta.json"))
    meta.write_text("{broken")  # a power loss before the page cache reached the disk
    with pytest.warns(RuntimeWarning, match="damaged; the session's state was rebuilt"):
        loaded = SessionManager(tmp_path).get_or_create("chat:1")
    assert loaded.metadata == {"topic": "kept"} and loaded.turns == session.turns
    assert [m.id for m in loaded.current_chat_history] == [m.id for m in session.current_chat_history]
    assert [m.id for m in loaded.full_chat_history] == [m.id for m in session.full_chat_history]


def test_a_corrupt_meta_file_without_state_lines_is_an_error_not_an_empty_session(tmp_path: Path) -> None:
    manager, _, log = saved(tmp_path)
    log.write_bytes(b"".join(line for line in log.read_bytes().splitlines(keepends=True) if b'"_type": "state"' not in line))
    meta = log.with_name(log.name.replace(".jsonl", ".meta.json"))
    meta.write_text("{broken")  # an older version's log holds no state lines: nothing to rebuild from
    with pytest.raises(StoreError, match="not valid JSON"):
        SessionManager(tmp_path).get_or_create("chat:1")
    with pytest.raises(StoreError):
        manager.save(manager.get_or_create("chat:1"))
    assert meta.read_text() == "{broken"


def test_an_unreachable_postgres_is_a_clear_error() -> None:
    with pytest.raises(StoreError, match=r"cannot reach Postgres at postgresql://user:\*\*\*@127\.0\.0\.1:1/db") as caught:
        PostgresStore("postgresql://user:secret@127.0.0.1:1/db", connect_timeout=2)
    assert "secret" not in str(caught.value)


def test_a_sqlite_file_from_a_future_version_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "future.sqlite3"
    SqliteStore(path).close()
    with sqlite3.connect(path) as connection:
        connection.execute("UPDATE sg_schema SET version = 99")
    with pytest.raises(StoreError, match="newer session_graph"):
        SqliteStore(path)


def test_nanobot_sessions_import(tmp_path: Path) -> None:
    folder = tmp_path / "nanobot"
    folder.mkdir()
    lines = [
        {"_type": "metadata", "key": "telegram:42", "created_at": "2026-01-01T10:00:00", "updated_at": "2026-01-01T10:05:00",
         "metadata": {"title": "trip"}, "last_consolidated": 0},
        {"role": "user", "content": "plan a trip", "timestamp": "2026-01-01T10:00:00"},
        {"role": "assistant", "content": None, "timestamp": "2026-01-01T10:00:01",
         "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "search", "arguments": "{\"q\": \"oslo\"}"}}]},
        {"role": "tool", "content": "Oslo is nice", "tool_call_id": "c1", "name": "search", "timestamp": "2026-01-01T10:00:02"},
        {"role": "assistant", "content": "Go to Oslo.", "timestamp": "2026-01-01T10:00:03"},
    ]
    (folder / "telegram_42.jsonl").write_text("\n".join(json.dumps(line) for line in lines) + "\n")
    manager = SessionManager(tmp_path / "store")
    assert manager.import_nanobot(folder) == ["telegram:42"]
    session = SessionManager(tmp_path / "store").get_or_create("telegram:42")
    assert [m.type for m in session.full_chat_history] == ["human", "ai", "tool", "ai"]
    assert session.full_chat_history[1].tool_calls[0]["args"] == {"q": "oslo"}
    assert session.metadata["title"] == "trip" and session.turns == 1
    assert manager.stats("telegram:42").duration_seconds == 3.0
    with pytest.raises(StoreError, match="already in the store"):
        manager.import_nanobot(folder)
