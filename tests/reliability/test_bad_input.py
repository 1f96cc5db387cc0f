"""A catalogue of bad input: each case is a SessionGraphError naming the culprit, and what was
there before (the session, the store's files, the CLI's store) is byte-identical after."""

from __future__ import annotations

from collections.abc import Callable
import hashlib
import json
import math
from pathlib import Path
import sqlite3
from typing import Any

from langchain_core.messages import AIMessage, HumanMessage
import pytest

from session_graph import (
    DocumentError,
    InvalidKeyError,
    MessageError,
    Session,
    SessionGraphError,
    SettingsError,
    StoreError,
)
from session_graph.cli import main
from session_graph.stores import JsonlStore, SessionManager, SqliteStore


def base_session() -> Session:
    session = Session("s")
    session.append_message({"role": "user", "content": "hello", "id": "u0"})
    session.append_message({"role": "assistant", "content": "hi", "id": "a0"})
    return session


def nested(depth: int) -> Any:
    value: Any = "leaf"
    for _ in range(depth):
        value = {"k": value}
    return value


MESSAGES: dict[str, tuple[Any, str]] = {
    "lone surrogate in text": ({"role": "user", "content": "bad \ud800"}, "surrogate"),
    "lone surrogate in a text part": ({"role": "user", "content": [{"type": "text", "text": "x\udfff"}]}, "content\\[0\\].text"),
    "lone surrogate in tool args": (AIMessage(content="", tool_calls=[{"id": "c", "name": "f", "args": {"q": "\ud801"}}]), "tool_calls"),
    "lone surrogate in a name": ({"role": "user", "content": "x", "name": "ann\ud800"}, "name"),
    "bytes in a content part": ({"role": "user", "content": [{"type": "image", "data": b"\x89PNG"}]}, "raw bytes"),
    "bytearray in additional_kwargs": (HumanMessage(content="x", additional_kwargs={"blob": bytearray(b"ab")}), "additional_kwargs.blob"),
    "NaN in tool args": (AIMessage(content="", tool_calls=[{"id": "c", "name": "f", "args": {"x": math.nan}}]), "NaN"),
    "infinity in response_metadata": (AIMessage(content="x", response_metadata={"score": math.inf}), "response_metadata.score"),
    "a non-string key": (HumanMessage(content="x", additional_kwargs={"meta": {1: "one"}}), "key 1"),
    "a set": (HumanMessage(content="x", additional_kwargs={"tags": {"a", "b"}}), "set"),
    "a datetime": (AIMessage(content="x", response_metadata={"at": __import__("datetime").datetime(2026, 1, 1)}), "datetime"),
    "nesting 5,000 deep": (HumanMessage(content="x", additional_kwargs={"deep": nested(5000)}), "deeper than 64"),
    "an id with a NUL": ({"role": "user", "content": "x", "id": "a\x00b"}, "NUL"),
    "an unknown role": ({"role": "robot", "content": "x"}, "role 'robot'"),
    "no content": ({"role": "user"}, "no 'content'"),
    "content that is a number": ({"role": "user", "content": 42}, "content must be"),
    "a tool result without its call id": ({"role": "tool", "content": "x"}, "tool_call_id"),
    "tool_calls that are not a list": ({"role": "assistant", "content": "", "tool_calls": {"id": "c"}}, "must be a list"),
    "tool arguments that are not JSON": ({"role": "assistant", "content": "", "tool_calls": [
        {"id": "c", "type": "function", "function": {"name": "f", "arguments": "{oops"}}]}, "not JSON"),
    "an id already in the session": ({"role": "user", "content": "again", "id": "u0"}, "already in session"),
    "not a message at all": (42, "must be a langchain-core message"),
    "a content part without a type": ({"role": "user", "content": [{"text": "x"}]}, "'type'"),
}


@pytest.mark.parametrize("name", list(MESSAGES))
def test_bad_messages(name: str) -> None:
    value, words = MESSAGES[name]
    session = base_session()
    before = session.to_json()
    with pytest.raises(MessageError, match=words):
        session.append_message(value)
    assert session.to_json() == before
    session.append_message({"role": "user", "content": "still works"})  # nothing half-registered


SETTINGS: dict[str, tuple[str, Any, str]] = {
    "a typo in a section": ("session.limits.tokens", 1000, "did you mean 'session.limit'"),
    "a typo in a key": ("session.resize.every_n_turn", 3, "did you mean 'session.resize.every_n_turns'"),
    "a typo in tokens": ("session.tokens.encodng", "o200k_base", "did you mean 'session.tokens.encoding'"),
    "a scalar over a section": ("session.resize", 5, "session.resize must be a dict"),
    "an API key": ("session.model", {"api_key": "sk-1234"}, "looks like a credential"),
    "a password under custom": ("session.custom.db_password", "hunter2", "looks like a credential"),
    "an unknown mode": ("session.mode", "heavy", "'lite', 'memo' or 'summary'"),
    "a tiny token budget": ("session.limit.tokens", 10, "at least 32 tokens"),
    "a zero chunk": ("session.memo.chunk_tokens", 0, "whole number > 0"),
    "a ratio over one": ("session.memo.fold_min_ratio", 2, r"\(0, 1\]"),
    "a ratio as text": ("session.tokens.prune_to_ratio", "0.5", r"\(0, 1\]"),
    "a negative cadence": ("session.resize.every_n_turns", -1, ">= 0"),
    "outside the namespace": ("openai.api_key", "sk", "outside the 'session.' namespace"),
    "an empty part": ("session..mode", "lite", "empty part"),
}


@pytest.mark.parametrize("name", list(SETTINGS))
def test_bad_settings(name: str) -> None:
    key, value, words = SETTINGS[name]
    session = base_session()
    before = session.to_json()
    with pytest.raises(SettingsError, match=words):
        session.set_settings(key, value)
    assert session.to_json() == before


def test_a_credential_never_reaches_an_export() -> None:
    with pytest.raises(SettingsError, match="credential"):
        Session(settings={"session.model": {"api_key": "sk-secret"}})


def document(**change: Any) -> str:
    data = json.loads(base_session().to_json())
    data.update(change)
    return json.dumps(data)


BOMB = "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"{chr(98 + i)}: &{chr(98 + i)} [{', '.join([f'*{chr(97 + i)}'] * 9)}]\n" for i in range(8)
)
DOCUMENTS: dict[str, tuple[Callable[[], Any], str, str]] = {
    "an empty object": (lambda: "{}", "json", "lacks id"),
    "an unrelated object": (lambda: '{"name": "not a session"}', "json", "unknown keys"),
    "a newer schema": (lambda: document(schema=2), "json", "newer session_graph"),
    "a schema that is not a number": (lambda: document(schema="one"), "json", "'schema' must be"),
    "a typo in a key": (lambda: document(memo_cursr=0), "json", "did you mean 'memo_cursor'"),
    "duplicate message ids": (lambda: document(full_chat_history=[json.loads(base_session().to_json())["full_chat_history"][0]] * 2),
                              "json", "repeats message id"),
    "a YAML alias bomb": (lambda: BOMB, "yaml", "YAML aliases"),
    "an alias bomb under settings": (lambda: "settings:\n  session:\n    custom:\n" + "".join("      " + line + "\n" for line in BOMB.splitlines()),
                                     "yaml", "YAML aliases"),
    "JSON nested 5,000 deep": (lambda: "[" * 5000 + "]" * 5000, "json", "nests deeper"),
    "bytes that are not UTF-8": (lambda: b'{"id": "\xff\xfe"}', "json", "not valid JSON"),
    "YAML that does not parse": (lambda: "a: [unclosed", "yaml", "not valid YAML"),
    "a message of an unknown type": (lambda: document(full_chat_history=[{"type": "robot", "data": {"content": "x"}}]),
                                     "json", "not a valid 'robot' message"),
    "a memo that is a list": (lambda: document(memo=[1]), "json", "'memo' must be a dict"),
    "negative turns": (lambda: document(turns=-1), "json", "'turns' must be"),
    "a cursor past the history": (lambda: document(memo_cursor=99), "json", "'memo_cursor' is 99"),
    "settings with an unknown key": (lambda: document(settings={"session": {"moode": "lite"}}), "json", "did you mean 'session.mode'"),
    "a stored lone surrogate": (lambda: document(full_chat_history=[{"type": "human", "data": {"content": "\ud800", "id": "x"}}]),
                                "json", "surrogate"),
}


@pytest.mark.parametrize("name", list(DOCUMENTS))
def test_bad_documents(name: str) -> None:
    make, fmt, words = DOCUMENTS[name]
    session = base_session()
    before = session.to_json()
    with pytest.raises(DocumentError, match=words):
        (session.load_json if fmt == "json" else session.load_yaml)(make())
    assert session.to_json() == before


def digest(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.mark.parametrize("key", ["../escape", "/absolute", "~home", "a\x00b", "", "x" * 300, 42])
def test_bad_keys(tmp_path: Path, key: Any) -> None:
    manager = SessionManager(tmp_path / "store")
    manager.save(base_session())
    before = digest(tmp_path)
    with pytest.raises(InvalidKeyError):
        manager.get_or_create(key)
    assert digest(tmp_path) == before


def jsonl_with(tmp_path: Path, damage: Callable[[Path], None]) -> tuple[SessionManager, Path]:
    folder = tmp_path / "jsonl"
    manager = SessionManager(JsonlStore(folder))
    manager.save(base_session())
    meta = next(folder.rglob("*.meta.json"))
    damage(meta)
    return SessionManager(JsonlStore(folder)), folder


DAMAGED_META: dict[str, Callable[[Path], None]] = {
    "a meta file that is not JSON": lambda meta: meta.write_text("{broken"),
    "a meta file that is not UTF-8": lambda meta: meta.write_bytes(b"\xff\xfe{}"),
    "a meta file that is a list": lambda meta: meta.write_text("[1, 2]"),
}


@pytest.mark.parametrize("name", list(DAMAGED_META))
def test_a_damaged_meta_file_is_rebuilt_from_the_log_and_nothing_is_written(tmp_path: Path, name: str) -> None:
    manager, folder = jsonl_with(tmp_path, DAMAGED_META[name])
    before = digest(folder)
    with pytest.warns(RuntimeWarning, match="damaged; the session's state was rebuilt"):
        loaded = manager.get_or_create("s")
    assert [m.id for m in loaded.full_chat_history] == ["u0", "a0"]
    assert digest(folder) == before


STORE_FILES: dict[str, tuple[Callable[[Path], None], str]] = {
    "a meta file from a newer version": (lambda meta: meta.write_text(json.dumps({"schema": 99})), "newer session_graph"),
    "a meta file with a broken window": (lambda meta: meta.write_text(json.dumps({"schema": 1, "turns": "many"})), "damaged"),
}


@pytest.mark.parametrize("name", list(STORE_FILES))
def test_corrupt_jsonl_files(tmp_path: Path, name: str) -> None:
    damage, words = STORE_FILES[name]
    manager, folder = jsonl_with(tmp_path, damage)
    before = digest(folder)
    with pytest.raises(StoreError, match=words):
        manager.get_or_create("s")
    assert digest(folder) == before


def test_a_log_line_that_is_json_but_no_record_is_quarantined(tmp_path: Path) -> None:
    folder = tmp_path / "jsonl"
    manager = SessionManager(JsonlStore(folder))
    manager.save(base_session())
    log = next(p for p in folder.rglob("*.jsonl") if "quarantine" not in p.name)
    with open(log, "a") as handle:
        handle.write('{"foo": "bar"}\n[1, 2]\n')
    with pytest.warns(RuntimeWarning, match="corrupt line"):
        loaded = SessionManager(JsonlStore(folder)).get_or_create("s")
    assert [m.id for m in loaded.full_chat_history] == ["u0", "a0"]
    with pytest.warns(RuntimeWarning, match="corrupt line"):
        assert len(manager.search("hello", mode="substring")) == 1  # search for the tenant still works
    assert any("quarantine" in p.name for p in folder.rglob("*"))


@pytest.mark.parametrize("column", ["state", "data"])
def test_corrupt_sqlite_rows(tmp_path: Path, column: str) -> None:
    path = tmp_path / "store.db"
    SessionManager(SqliteStore(path)).save(base_session())
    with sqlite3.connect(path) as connection:
        table = "sg_sessions" if column == "state" else "sg_messages"
        connection.execute(f"UPDATE {table} SET {column} = '{{broken'")
    before = path.read_bytes()
    with pytest.raises(StoreError, match="broken JSON"):
        SessionManager(SqliteStore(path)).get_or_create("s")
    assert path.read_bytes() == before


def test_store_paths_of_the_wrong_kind(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("x")
    (tmp_path / "dir.db").mkdir()
    before = digest(tmp_path)
    with pytest.raises(StoreError, match="is a file"):
        JsonlStore(tmp_path / "file")
    with pytest.raises(StoreError, match="is a directory"):
        SqliteStore(tmp_path / "dir.db")
    assert digest(tmp_path) == before


CLI: dict[str, tuple[list[str], str]] = {
    "an unknown URL scheme": (["sessions", "--store", "mysql://u:pw@h/db", "list"], "unknown store URL scheme 'mysql'"),
    "an ambiguous sqlite URL": (["sessions", "--store", "sqlite://x.db", "list"], "ambiguous"),
    "a store that does not exist": (["sessions", "--store", "{tmp}/missing", "list"], "no session store at"),
    "a sqlite file that does not exist": (["sessions", "--store", "{tmp}/missing.db", "list"], "no SQLite store"),
    "a session that does not exist": (["sessions", "--store", "{tmp}/store", "show", "nobody"], "no stored session 'nobody'"),
    "deleting what does not exist": (["sessions", "--store", "{tmp}/store", "delete", "nobody"], "no session 'nobody'"),
    "a tenant that escapes": (["sessions", "--store", "{tmp}/store", "--tenant", "../x", "list"], "tenant"),
}


@pytest.mark.parametrize("name", list(CLI))
def test_bad_cli_arguments(tmp_path: Path, name: str, capsys: pytest.CaptureFixture[str]) -> None:
    SessionManager(tmp_path / "store").save(base_session())
    before = digest(tmp_path)
    argv, words = CLI[name]
    status = main([arg.replace("{tmp}", str(tmp_path)) for arg in argv])
    assert status != 0
    assert words in capsys.readouterr().err
    assert digest(tmp_path) == before  # nothing created, nothing changed
    assert "pw" not in capsys.readouterr().err


def test_every_catalogue_error_is_one_of_ours() -> None:
    for error in (MessageError, SettingsError, DocumentError, InvalidKeyError, StoreError):
        assert issubclass(error, SessionGraphError)
    cases = len(MESSAGES) + len(SETTINGS) + len(DOCUMENTS) + 7 + len(STORE_FILES) + 2 + 1 + len(CLI)
    assert cases >= 60
