"""A session's first JSONL save appends its log, then writes its meta file; a reader that takes
no lock (``read``, ``version``, ``list``: another manager's ``get`` of the key) can land in
between and find a log without a meta file, which is what a crash leaves. It then warned that
the meta file "is missing" and rebuilt the state from the log: a false crash report in normal
concurrent use (an error where RuntimeWarnings are errors, as in this suite; the flaky failure
of ``test_agents_over_two_managers_in_threads_lose_nothing_and_fold_each_message_once[jsonl]``).
A reader that finds the meta file missing now looks again under the session's lock."""

from __future__ import annotations

from pathlib import Path
import threading
from typing import Any

import pytest

from session_graph import SessionManager
from session_graph.stores import JsonlStore
import session_graph.stores.jsonl as jsonl_module


def test_a_reader_racing_a_sessions_first_save_reports_no_missing_meta_file(tmp_path: Path,
                                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    store = JsonlStore(tmp_path, fsync=False)
    reports: list[str] = []
    monkeypatch.setattr(jsonl_module, "recovered", lambda note, *_: reports.append(note))
    go, saving = _first_save_paused(store, monkeypatch)

    reader_turn = threading.Event()  # the reader is done, or waits for the writer's lock
    entry = store._held._entry

    def watched(path: Path) -> Any:
        if threading.current_thread() is reading:
            reader_turn.set()
        return entry(path)

    monkeypatch.setattr(store._held, "_entry", watched)
    seen: list[Any] = []

    def read() -> None:
        try:
            seen.append(store.read("default", "k"))
        finally:
            reader_turn.set()

    reading = threading.Thread(target=read)
    reading.start()
    assert reader_turn.wait(30)
    go.set()
    saving.join(30)
    reading.join(30)
    assert not saving.is_alive() and not reading.is_alive()
    assert reports == []  # no false "meta file is missing" crash report
    snapshot = seen[0]
    assert snapshot is not None and [r["id"] for r in snapshot.records] == ["m1"]
    assert snapshot.state["message_count"] == 1 and snapshot.version == 1


def test_a_meta_file_really_missing_is_still_reported(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store = JsonlStore(tmp_path, fsync=False)
    manager = SessionManager(store)
    session = manager.get_or_create("k")
    session.append_message({"role": "user", "content": "hello", "id": "m1"})
    manager.save(session)
    reports: list[str] = []
    monkeypatch.setattr(jsonl_module, "recovered", lambda note, *_: reports.append(note))
    next(tmp_path.glob("default/*.meta.json")).unlink()  # what a crash between the two writes leaves
    snapshot = JsonlStore(tmp_path).read("default", "k")
    assert snapshot is not None and [r["id"] for r in snapshot.records] == ["m1"]
    assert len(reports) == 1 and "is missing" in reports[0]


def test_a_reader_whose_first_look_missed_the_meta_file_looks_again_even_once_it_exists(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The reader found the log without its meta file, and the first save finished before the
    reader decided what that meant: it must not report what it saw then."""
    store = JsonlStore(tmp_path, fsync=False)
    reports: list[str] = []
    monkeypatch.setattr(jsonl_module, "recovered", lambda note, *_: reports.append(note))
    go, saving = _first_save_paused(store, monkeypatch)
    current_state = jsonl_module.current_state
    looks: list[str | None] = []

    def then_the_save_ends(*args: Any) -> Any:
        found = current_state(*args)
        looks.append(found[1])
        if len(looks) == 1:  # the first look saw the log alone; the save ends before it is judged
            go.set()
            saving.join(30)
        return found

    monkeypatch.setattr(jsonl_module, "current_state", then_the_save_ends)
    snapshot = store.read("default", "k")
    assert not saving.is_alive()
    assert looks[0] is not None and "is missing" in looks[0]  # the race this test is about happened
    assert reports == []
    assert snapshot is not None and [r["id"] for r in snapshot.records] == ["m1"] and snapshot.version == 1


def _first_save_paused(store: JsonlStore, monkeypatch: pytest.MonkeyPatch) -> tuple[threading.Event, threading.Thread]:
    """A session's first save started in a thread and paused between its log and its meta file;
    setting the event returned lets it end."""
    between, go = threading.Event(), threading.Event()
    replace = store._replace

    def paused_replace(*args: Any) -> None:
        between.set()
        assert go.wait(30)
        replace(*args)

    monkeypatch.setattr(store, "_replace", paused_replace)
    writer = SessionManager(store)
    session = writer.get_or_create("k")
    session.append_message({"role": "user", "content": "hello", "id": "m1"})
    saving = threading.Thread(target=writer.save, args=(session,))
    saving.start()
    assert between.wait(30)
    return go, saving
