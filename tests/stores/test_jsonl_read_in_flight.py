"""A reader of the JSONL store takes no lock, so it can meet a save in flight. A session's first
save appends its log, then writes its meta file: in between, the log is there and the meta file
is not. That is a write in progress, not a damaged store: a reader must not report it as a
recovery (a RuntimeWarning and a store warning; under ``-W error`` a crash of the reader), nor
load the session as a version-0 state it made up. Each test holds the race at its exact point
with events (no sleeps): the pause is injected where the writer or the reader stands."""

from __future__ import annotations

import logging
from pathlib import Path
import threading
from typing import Any

from langchain_core.messages import HumanMessage
import pytest

from session_graph import Session
from session_graph.stores import JsonlStore, SessionManager, jsonl_handles

TENANT = "default"


def _save_first(store: JsonlStore, errors: list[BaseException]) -> None:
    try:
        session = Session("k")
        session.append_message(HumanMessage(content="hello", id="m1"))
        SessionManager(store, tenant=TENANT).save(session)
    except BaseException as error:  # reported by the test
        errors.append(error)


def _no_recovery_reported(caplog: pytest.LogCaptureFixture) -> None:
    reported = [r.getMessage() for r in caplog.records if r.name.startswith("session_graph.stores")]
    assert not reported, reported


@pytest.mark.parametrize("reader", ["read", "version", "manager"])
def test_a_reader_between_a_first_saves_log_and_its_meta_file_waits_for_the_save(
        reader: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    store = JsonlStore(tmp_path / "j", fsync=False)
    appended, resume = threading.Event(), threading.Event()
    replace, holding = JsonlStore._replace, JsonlStore._holding

    def paused_replace(self: JsonlStore, meta: Path, document: dict[str, Any], encoded: Any) -> None:
        if threading.current_thread().name == "writer":  # the log holds the save; its meta file is not written yet
            appended.set()
            resume.wait(30)
        replace(self, meta, document, encoded)

    def asking(self: JsonlStore, tenant: str, key: str) -> Any:
        if threading.current_thread().name == "reader":  # the reader asks for the lock the writer holds
            resume.set()
        return holding(self, tenant, key)

    monkeypatch.setattr(JsonlStore, "_replace", paused_replace)
    monkeypatch.setattr(JsonlStore, "_holding", asking)
    caplog.set_level(logging.WARNING)
    errors: list[BaseException] = []
    seen: list[Any] = []

    def read() -> None:
        try:
            if reader == "read":
                snapshot = store.read(TENANT, "k")
                seen.append(None if snapshot is None else (snapshot.version, [r["id"] for r in snapshot.records]))
            elif reader == "version":
                seen.append(store.version(TENANT, "k"))
            else:
                loaded = SessionManager(store, tenant=TENANT).get("k")
                seen.append(None if loaded is None else [m.id for m in loaded.full_chat_history])
        except BaseException as error:  # a RuntimeWarning under -W error among them
            errors.append(error)

    writer = threading.Thread(target=_save_first, args=(store, errors), name="writer")
    writer.start()
    assert appended.wait(30)
    worker = threading.Thread(target=read, name="reader")
    worker.start()
    worker.join(30)
    resume.set()  # the reader did not wait (before the fix): let the writer finish
    writer.join(30)
    assert not errors, errors
    _no_recovery_reported(caplog)
    expected = {"read": (1, ["m1"]), "version": 1, "manager": ["m1"]}[reader]
    assert seen == [expected]


def test_a_reader_that_read_no_state_before_a_first_save_reads_it_again(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    """The reader finds no meta file and no log, then the whole first save lands before it reads
    the log's records: records without a state are a save it half saw, not a lost meta file."""
    store = JsonlStore(tmp_path / "j", fsync=False)
    records = JsonlStore._records
    errors: list[BaseException] = []

    def late_records(self: JsonlStore, *args: Any, **kwargs: Any) -> Any:
        if threading.current_thread().name == "reader" and not getattr(late_records, "done", False):
            late_records.done = True  # type: ignore[attr-defined]
            writer = threading.Thread(target=_save_first, args=(store, errors), name="writer")
            writer.start()
            writer.join(30)
        return records(self, *args, **kwargs)

    monkeypatch.setattr(JsonlStore, "_records", late_records)
    caplog.set_level(logging.WARNING)
    seen: list[Any] = []

    worker = threading.Thread(target=_read, args=(store, seen, errors), name="reader")
    worker.start()
    worker.join(30)
    assert not errors, errors
    _no_recovery_reported(caplog)
    assert seen == [(1, ["m1"])]


def test_a_meta_file_really_missing_is_still_reported_and_rebuilt(tmp_path: Path) -> None:
    """No save in flight (the lock is free): a missing meta file is a recovery, reported once per
    read, and the state comes from the log's state lines."""
    store = JsonlStore(tmp_path / "j", fsync=False)
    errors: list[BaseException] = []
    _save_first(store, errors)
    assert not errors
    meta = store._paths(TENANT, "k")[1]
    meta.unlink()
    fresh = JsonlStore(tmp_path / "j", fsync=False)
    with pytest.warns(RuntimeWarning, match="missing"):
        snapshot = fresh.read(TENANT, "k")
    assert snapshot is not None and snapshot.version == 1 and [r["id"] for r in snapshot.records] == ["m1"]


def test_a_reader_that_sees_half_of_a_save_in_flight_reads_it_whole(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    """A save's append is one ``write``, but a reader may see part of it (Linux copies a write
    into the page cache a page at a time; a short write on a full disk goes on in a second call):
    the log then ends in half a line. Under the writer's lock that would be a crash's torn line;
    without it, a write in flight: the reader reads again under the lock, never warns of a torn
    line nor drops the message."""
    store = JsonlStore(tmp_path / "j", fsync=False)
    errors: list[BaseException] = []
    _save_first(store, errors)
    assert not errors
    halfway, resume = threading.Event(), threading.Event()
    real_os = jsonl_handles.os

    class HalfWrites:
        """``os`` for the held files: the writer thread's first write stops halfway until a reader came."""

        def __getattr__(self, name: str) -> Any:
            return getattr(real_os, name)

        @staticmethod
        def write(fd: int, data: Any) -> int:
            if threading.current_thread().name == "writer" and not halfway.is_set():
                written = real_os.write(fd, bytes(data[: len(data) // 2]))
                halfway.set()
                resume.wait(30)
                return written
            return real_os.write(fd, data)

    holding = JsonlStore._holding

    def asking(self: JsonlStore, tenant: str, key: str) -> Any:
        if threading.current_thread().name == "reader":
            resume.set()
        return holding(self, tenant, key)

    monkeypatch.setattr(jsonl_handles, "os", HalfWrites())
    monkeypatch.setattr(JsonlStore, "_holding", asking)
    caplog.set_level(logging.WARNING)

    def second_save() -> None:
        try:
            manager = SessionManager(store, tenant=TENANT)
            session = manager.get_or_create("k")
            session.append_message(HumanMessage(content="again " * 200, id="m2"))
            manager.save(session)
        except BaseException as error:
            errors.append(error)

    seen: list[Any] = []

    writer = threading.Thread(target=second_save, name="writer")
    writer.start()
    assert halfway.wait(30)
    worker = threading.Thread(target=_read, args=(store, seen, errors), name="reader")
    worker.start()
    worker.join(30)
    resume.set()
    writer.join(30)
    assert not errors, errors
    _no_recovery_reported(caplog)
    assert seen == [(2, ["m1", "m2"])]


def test_version_that_found_no_state_before_a_first_save_reads_it_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``version`` finds no state (nothing stored yet), then the whole first save lands before it
    looks at the log: the session is at version 1, not a version-0 transcript without a meta file."""
    store = JsonlStore(tmp_path / "j", fsync=False)
    current = JsonlStore._current
    errors: list[BaseException] = []

    def late_save(self: JsonlStore, *args: Any, **kwargs: Any) -> Any:
        state = current(self, *args, **kwargs)
        if threading.current_thread().name == "reader" and not getattr(late_save, "done", False):
            late_save.done = True  # type: ignore[attr-defined]
            writer = threading.Thread(target=_save_first, args=(store, errors), name="writer")
            writer.start()
            writer.join(30)
        return state

    monkeypatch.setattr(JsonlStore, "_current", late_save)
    seen: list[Any] = []
    worker = threading.Thread(target=lambda: seen.append(store.version(TENANT, "k")), name="reader")
    worker.start()
    worker.join(30)
    assert not errors, errors
    assert seen == [1]


def _read(store: JsonlStore, seen: list[Any], errors: list[BaseException]) -> None:
    """The session's snapshot as a reader sees it (version and record ids), or the error it met."""
    try:
        snapshot = store.read(TENANT, "k")
        seen.append(None if snapshot is None else (snapshot.version, [r["id"] for r in snapshot.records]))
    except BaseException as error:
        errors.append(error)
