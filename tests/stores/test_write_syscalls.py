"""An appended JSONL write makes the system calls its guarantees need and no others (issue 25):
the lock (``flock`` twice), the checks that the held lock file, the meta file and the log are
the files at their paths (one ``stat`` each: the meta file's too, since a meta-only rewrite, a
newer version's or a hand edit's, leaves the log as it was: tests/stores/test_meta_rewritten_behind.py),
the write, and the ``fsync`` when durable. What the
calls it no longer makes guarded is still caught: the log's size after the write (``lseek``) by
the next write's ``stat`` when a line came behind the store's back, the fork (``getpid``) by the
fork count the held files carry. And the write path's encoding in one C call per value (orjson,
JSONL and SQL stores alike) falls back to ``json`` where orjson refuses a value."""

from __future__ import annotations

from collections import Counter
import fcntl
import gc
import json
import os
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from langchain_core.messages import AIMessage
import pytest

from session_graph import SessionManager
from session_graph._base.files import encode_name
from session_graph.errors import MessageError, StoreError
from session_graph.stores import JsonlStore, SqliteStore, jsonl_handles, search_marker
from session_graph.stores.sql_steps import json_text

CALLS = ("stat", "fstat", "lstat", "open", "close", "write", "fsync", "lseek", "getpid", "read", "replace", "utime")


def turn(manager: SessionManager, text: str, durable: bool = True) -> None:
    session = manager.get_or_create("k")
    session.append_message({"role": "user", "content": text})
    manager.save(session, durable=durable)


# a line another writer appends to session k's log, taking no lock
THEIRS = json.dumps({"seq": 2, "id": "theirs", "ts": "2026-11-22T00:00:00Z", "role": "user",
                     "message": {"type": "human", "data": {"content": "theirs", "type": "human", "id": "theirs"}}}) + "\n"


def two_turns(tmp_path: Path) -> tuple[JsonlStore, SessionManager, Path]:
    """A JSONL store with session k saved twice ("one", "two"): the store, its manager and k's log."""
    store = JsonlStore(tmp_path)
    manager = SessionManager(store)
    turn(manager, "one")
    turn(manager, "two")
    return store, manager, tmp_path / "default" / (encode_name("k") + ".jsonl")


def written_bytes(store: JsonlStore, log: Path) -> int | None:
    """The log's size the store recorded after its last write (none if it recorded none)."""
    written = store._written.get(log.with_name(log.name.removesuffix(".jsonl") + ".meta.json"))[0]
    return None if written is None else written["bytes"]


def counted(monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    calls: Counter[str] = Counter()
    for name in CALLS:
        real = getattr(os, name)

        def call(*args: Any, real: Any = real, name: str = name, **kwargs: Any) -> Any:
            calls[name] += 1
            return real(*args, **kwargs)

        monkeypatch.setattr(os, name, call)
    real_flock = fcntl.flock

    def flock(*args: Any) -> Any:
        calls["flock"] += 1
        return real_flock(*args)

    monkeypatch.setattr(fcntl, "flock", flock)
    return calls


@pytest.mark.skipif(not jsonl_handles.HOLD_LOG, reason="the log is held open between writes")
@pytest.mark.parametrize("durable", [True, False])
def test_an_appended_write_is_the_lock_three_stats_the_write_and_its_fsync(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, durable: bool) -> None:
    # the tenant folder's change marker is bumped (a utime) when the last bump is RACY / 4 old: on
    # a loaded machine the saves before the counted one can take that long; one clock instant here
    monkeypatch.setattr(search_marker, "time", SimpleNamespace(time=lambda: 1.8e9))
    store, manager, log = two_turns(tmp_path)
    session = manager.get_or_create("k")
    session.append_message({"role": "user", "content": "three"})
    gc.collect()  # a store an earlier test dropped closes its files now, not inside the count
    calls = counted(monkeypatch)
    manager.save(session, durable=durable)  # the write alone
    monkeypatch.undo()
    assert calls == Counter({"flock": 2, "stat": 3, "write": 1, **({"fsync": 1} if durable else {})})
    assert written_bytes(store, log) == log.stat().st_size  # the size after it, without asking the file


def test_a_line_appended_behind_the_stores_back_is_seen_by_the_next_write(tmp_path: Path) -> None:
    store, manager, log = two_turns(tmp_path)
    with open(log, "a") as handle:  # another writer, no lock taken: the store's size is now behind the file's
        handle.write(THEIRS)
    turn(manager, "three")  # not appended on top of the state it wrote: the file's size is not that state's
    assert written_bytes(store, log) == log.stat().st_size
    loaded = SessionManager(JsonlStore(tmp_path)).get("k")
    assert [m.content for m in loaded.full_chat_history] == ["one", "two", "theirs", "three"]
    window = JsonlStore(tmp_path).read("default", "k", window=True)  # seeks through the offsets: they hold
    assert window is not None and [r["message"]["data"]["content"] for r in window.records][-1] == "three"


@pytest.mark.skipif(not jsonl_handles.HOLD_LOG, reason="the log is held open between writes")
def test_a_session_written_anew_at_the_same_size_by_another_store_is_not_appended_on(tmp_path: Path) -> None:
    """Another store (another process) that deletes the session and writes it
    anew, here byte for byte the same log but a meta file of its own, made a new log file (a new
    inode; the held one stays allocated while open, so its inode is not reused): the next save
    does not append on the state it cached but saves in full and keeps the other's change."""
    store, manager, log = two_turns(tmp_path)
    meta = log.with_name(encode_name("k") + ".meta.json")
    data = log.read_bytes()
    at = data.rindex(b'"version":2,')
    data = data[:at] + b'"version":7,' + data[at + 12 :]  # the other's saves: the same size
    state = JsonlStore(tmp_path).read("default", "k")
    assert state is not None
    session = manager.get_or_create("k")  # held across: the save's own checks, not a reload, must see the other writer
    log.unlink()
    log.write_bytes(data)  # another file at the path
    meta.write_text(json.dumps({**state.state, "version": 7, "bytes": len(data)}))  # and its meta file
    appends: list[Any] = []
    real = store.append_messages

    def spied(*args: Any, **kwargs: Any) -> Any:
        appends.append(real(*args, **kwargs))
        return appends[-1]

    store.append_messages = spied  # type: ignore[method-assign]
    session.append_message({"role": "user", "content": "three"})
    manager.save(session)
    assert appends and not any(appends)  # refused (the manager tries again after reading the store): not the state it cached; the full save merged instead
    loaded = SessionManager(JsonlStore(tmp_path)).get("k")
    assert [m.content for m in loaded.full_chat_history] == ["one", "two", "three"]
    assert JsonlStore(tmp_path).version("default", "k") == 8  # written on the other's state


def test_a_line_appended_without_the_lock_between_the_stat_and_the_write_is_seen_by_the_next_write(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The size after a write is the ``stat``'s under the lock + the bytes written: a writer that
    takes no lock (an older version, a hand append) landing between the two makes it short. The
    next write's ``stat`` differs from it, so it is not appended on a state it did not write, and
    every read (the window through the offsets too) sees every line."""
    store, manager, log = two_turns(tmp_path)
    real_write, done = os.write, []

    def write(fd: int, data: Any) -> int:
        if not done:  # the first write of the save, after its stat under the lock
            done.append(fd)
            with open(log, "a") as handle:
                handle.write(THEIRS)
        return real_write(fd, data)

    monkeypatch.setattr(jsonl_handles.os, "write", write)
    turn(manager, "three")
    monkeypatch.undo()
    assert done
    for reader in (store, JsonlStore(tmp_path)):  # the writer's own (its state) and a fresh one
        window = reader.read("default", "k", window=True)
        assert window is not None and [r["message"]["data"]["content"] for r in window.records][-2:] == ["theirs", "three"]
    turn(manager, "four")
    assert written_bytes(store, log) == log.stat().st_size
    loaded = SessionManager(JsonlStore(tmp_path)).get("k")
    assert [m.content for m in loaded.full_chat_history] == ["one", "two", "theirs", "three", "four"]


def test_held_files_from_before_a_fork_are_not_the_childs(tmp_path: Path) -> None:
    """The child drops what it inherited (``_after_fork``); were that skipped, the fork count the
    held files carry still tells them from the child's: a new ``Held`` is made."""
    held = jsonl_handles.HeldFiles()
    path = tmp_path / "k.lock"
    first = held._entry(path)
    assert held._entry(path) is first
    jsonl_handles._forked()  # what os.register_at_fork runs in a child, without the drop
    try:
        assert held._entry(path) is not first
    finally:
        jsonl_handles._FORKS[0] -= 1
    held.close()


def test_an_int_orjson_refuses_is_refused_at_the_append_and_the_save_not_read_back_as_a_float(tmp_path: Path) -> None:
    """An int past 64 bits: orjson will not write it (``json``'s fallback would), and every store
    reads it back with orjson as a float (``2**64 == float(2**64)``, so an ``==`` check would not
    see it): refused where it is set (a message) or at the save (the metadata), nothing written."""
    manager = SessionManager(JsonlStore(tmp_path))
    turn(manager, "one")
    session = manager.get_or_create("k")
    with pytest.raises(MessageError, match="64 bits"):
        session.append_message(AIMessage(content="big", additional_kwargs={"n": 2**70, "m": -(2**65)}))
    session.append_message(AIMessage(content="fits", additional_kwargs={"n": 2**64 - 1, "m": -(2**63)}))
    manager.save(session)
    session.metadata["big"] = 2**64
    with pytest.raises(StoreError, match=r"session\.metadata\['big'\].*64 bits"):
        turn(manager, "two")
    loaded = SessionManager(JsonlStore(tmp_path)).get("k")
    assert [m.content for m in loaded.full_chat_history] == ["one", "fits"]
    assert repr(loaded.full_chat_history[1].additional_kwargs) == repr({"n": 2**64 - 1, "m": -(2**63)})
    assert loaded.metadata == {}


def test_the_sql_store_writes_its_json_with_orjson_and_json_where_orjson_refuses(tmp_path: Path) -> None:
    """``json_text``: a state document and messages in orjson's text (read back as written, the
    64-bit ints' edges too), and json's where orjson refuses a value (an int past 64 bits)."""
    manager = SessionManager(SqliteStore(tmp_path / "s.db"))
    turn(manager, "one")
    session = manager.get_or_create("k")
    session.append_message(AIMessage(content="big", additional_kwargs={"n": 2**64 - 1, "nested": {"ok": [1.5, None, "é"]}}))
    session.metadata["big"] = -(2**63)
    manager.save(session)
    turn(manager, "two")
    loaded = SessionManager(SqliteStore(tmp_path / "s.db")).get("k")
    assert [m.content for m in loaded.full_chat_history] == ["one", "big", "two"]
    assert repr(loaded.full_chat_history[1].additional_kwargs) == repr({"n": 2**64 - 1, "nested": {"ok": [1.5, None, "é"]}})
    assert repr(loaded.metadata) == repr({"big": -(2**63)})  # repr: a float would be == the int
    assert json_text({"a": [1, "é"], 2: None}) == json.dumps({"a": [1, "é"], "2": None}, ensure_ascii=False, separators=(",", ":"))
    assert json_text(2**70) == str(2**70)
