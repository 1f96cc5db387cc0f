"""The JSONL store holds each session's lock file and log open across saves (issue 25), and never
trusts them blindly: the lock is still taken on every write, on the file at the path (one removed
and made again is locked anew), a log deleted and written again by another store is written at
the path, threads of one process take turns, and ``close`` closes what is held."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
import threading

from lock_util import held_by_others
import pytest

from session_graph import SessionManager
from session_graph._base.files import encode_name
from session_graph.stores import JsonlStore
from session_graph.stores.base import StoreChange


def files(root: Path, key: str = "k") -> tuple[Path, Path]:
    folder = root / "default"
    return folder / (encode_name(key) + ".jsonl"), folder / (encode_name(key) + ".lock")


def turn(manager: SessionManager, text: str, key: str = "k") -> None:
    session = manager.get_or_create(key)
    session.append_message({"role": "user", "content": text})
    manager.save(session)


@pytest.mark.skipif(os.name != "posix", reason="flock")
def test_the_lock_is_taken_on_every_write_on_the_file_at_the_path(tmp_path: Path) -> None:
    store = JsonlStore(tmp_path)
    manager = SessionManager(store)
    turn(manager, "one")
    _, lock = files(tmp_path)
    assert not held_by_others(lock)  # held open, but not locked between writes
    lock.unlink()  # removed (and below made again) behind the store's back

    seen: list[bool] = []

    def change(stored):
        seen.append(held_by_others(lock))
        return StoreChange(stored.state, [])

    store.update("default", "k", change)
    assert lock.exists() and seen == [True]  # the new file at the path is the one locked
    turn(manager, "two")
    assert [m.content for m in SessionManager(tmp_path).get("k").full_chat_history] == ["one", "two"]


def test_a_log_deleted_and_written_again_elsewhere_is_written_at_the_path(tmp_path: Path) -> None:
    manager = SessionManager(JsonlStore(tmp_path))
    turn(manager, "one")
    turn(manager, "two")
    other = SessionManager(JsonlStore(tmp_path))  # another process
    assert other.delete("k")
    turn(other, "theirs")
    turn(manager, "mine")  # our held log is the deleted file: the write must go to the new one
    log, _ = files(tmp_path)
    stored = [m.content for m in SessionManager(tmp_path).get("k").full_chat_history]
    assert "theirs" in stored and "mine" in stored and log.exists()


def test_threads_saving_one_session_through_one_store_take_turns(tmp_path: Path) -> None:
    store = JsonlStore(tmp_path)
    errors: list[BaseException] = []

    def writer(name: str) -> None:
        try:
            for i in range(25):
                store.update("default", "k", lambda stored, i=i: StoreChange(
                    {**(stored.state or {}), "window": []},
                    [{"id": f"{name}{i}", "role": "user", "ts": "", "message": {"type": "human", "data": {"content": f"{name}{i}"}}}]))
        except BaseException as error:  # pragma: no cover - reported below
            errors.append(error)

    threads = [threading.Thread(target=writer, args=(n,)) for n in "abcd"]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors
    snapshot = JsonlStore(tmp_path).read("default", "k")
    assert snapshot is not None and len(snapshot.records) == 100 and snapshot.version == 100
    assert [r["seq"] for r in snapshot.records] == list(range(100))  # no write interleaved with another


def open_in(root: Path) -> int:
    """How many files under ``root`` this process holds open."""
    found = 0
    for fd in os.listdir("/proc/self/fd"):
        with contextlib.suppress(OSError):  # closed meanwhile
            found += os.readlink(f"/proc/self/fd/{fd}").startswith(str(root))
    return found


@pytest.mark.skipif(not Path("/proc/self/fd").exists(), reason="counts open files through /proc")
def test_close_closes_the_held_files_and_a_later_save_opens_them_again(tmp_path: Path) -> None:
    store = JsonlStore(tmp_path)
    manager = SessionManager(store)
    for key in ("a", "b", "c"):
        turn(manager, "hello", key)
    assert open_in(tmp_path) == 6  # a lock file and a log per session
    store._held.limit = 2
    turn(manager, "again", "a")  # over the limit: the least recently used session's files are closed
    assert open_in(tmp_path) == 4
    manager.close()
    assert open_in(tmp_path) == 0
    turn(manager, "after close", "b")
    assert [m.content for m in SessionManager(tmp_path).get("b").full_chat_history] == ["hello", "after close"]
    manager.close()


@pytest.mark.skipif(not Path("/proc/self/fd").exists(), reason="counts open files through /proc")
def test_a_store_dropped_without_close_leaves_no_file_open(tmp_path: Path) -> None:
    import gc

    manager = SessionManager(JsonlStore(tmp_path))
    turn(manager, "hello")
    assert open_in(tmp_path) == 2
    del manager
    gc.collect()
    assert open_in(tmp_path) == 0


@pytest.mark.skipif(not Path("/proc/self/fd").exists(), reason="counts open files through /proc")
def test_delete_closes_the_held_log_before_removing_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Windows cannot remove a file that is open (no FILE_SHARE_DELETE): a session this store
    saved (its log held open) must still be deletable by the same store."""
    manager = SessionManager(JsonlStore(tmp_path))
    turn(manager, "hello")
    log, _ = files(tmp_path)
    open_at_unlink: list[bool] = []
    unlink = Path.unlink

    def checked(path: Path, missing_ok: bool = False) -> None:
        if path == log:
            open_at_unlink.append(any(os.readlink(f"/proc/self/fd/{fd}") == str(log)
                                      for fd in os.listdir("/proc/self/fd") if os.path.exists(f"/proc/self/fd/{fd}")))
        unlink(path, missing_ok=missing_ok)

    monkeypatch.setattr(Path, "unlink", checked)
    assert manager.delete("k")
    assert open_at_unlink == [False]
    turn(manager, "again")  # a later save opens a new log
    assert [m.content for m in SessionManager(tmp_path).get("k").full_chat_history] == ["again"]


@pytest.mark.skipif(not Path("/proc/self/fd").exists(), reason="counts open files through /proc")
def test_where_an_open_file_cannot_be_removed_no_log_stays_open_between_saves(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """On Windows (``HOLD_LOG`` False there) a log held open would keep every other process from
    deleting or clearing the session: each save closes it again; the lock file stays held."""
    from session_graph.stores import jsonl_handles

    monkeypatch.setattr(jsonl_handles, "HOLD_LOG", False)
    manager = SessionManager(JsonlStore(tmp_path))
    turn(manager, "one")
    turn(manager, "two")
    log, lock = files(tmp_path)
    open_now = {os.readlink(f"/proc/self/fd/{fd}") for fd in os.listdir("/proc/self/fd") if os.path.exists(f"/proc/self/fd/{fd}")}
    assert str(log) not in open_now and str(lock) in open_now
    assert [m.content for m in SessionManager(tmp_path).get("k").full_chat_history] == ["one", "two"]


def test_an_append_save_stats_the_lock_path_once_and_never_the_held_lock(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The held lock file's inode is read once, when it is opened (an open file keeps its inode):
    a save compares it with one ``stat`` of the path, no ``fstat``. Made again behind the store's
    back, the file at the path is still the one locked (the test above), and read again here."""
    manager = SessionManager(JsonlStore(tmp_path))
    turn(manager, "one")
    turn(manager, "two")
    _, lock = files(tmp_path)
    calls: list[tuple[str, str]] = []
    for name in ("stat", "fstat"):
        real = getattr(os, name)

        def counted(target, *args, real=real, name=name, **kwargs):
            calls.append((name, str(target)))
            return real(target, *args, **kwargs)

        monkeypatch.setattr(os, name, counted)
    turn(manager, "three")
    assert [c for c in calls if c[0] == "fstat"] == []
    assert calls.count(("stat", str(lock))) == 1
    lock.unlink()
    del calls[:]
    turn(manager, "four")  # a new lock file: opened, its inode read once
    assert len([c for c in calls if c[0] == "fstat"]) == 1
    monkeypatch.undo()
    assert [m.content for m in SessionManager(tmp_path).get("k").full_chat_history] == ["one", "two", "three", "four"]
