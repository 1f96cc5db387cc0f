"""The Windows branch of the file lock (msvcrt), run here with a stand-in msvcrt module.

The stand-in keeps Windows' contract: ``locking(fd, LK_NBLCK, n)`` locks n bytes from the
file's position or raises OSError at once when another process holds them; ``LK_UNLCK``
releases; the OS drops a dead process's locks. It is built on POSIX byte-range locks
(``fcntl.lockf``), so the cross-process tests exercise real exclusion.
"""

from __future__ import annotations

from pathlib import Path
import subprocess
import sys
import textwrap
import time
from typing import Any

import pytest

from session_graph._base import files

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="the stand-in msvcrt is built on fcntl")

FAKE_MSVCRT = textwrap.dedent('''
    import fcntl as _fcntl, os as _os, sys as _sys, types as _types
    _calls = []

    def locking(fd, mode, nbytes):
        offset = _os.lseek(fd, 0, _os.SEEK_CUR)
        _calls.append((mode, offset, nbytes))
        if mode == LK_UNLCK:
            _fcntl.lockf(fd, _fcntl.LOCK_UN, nbytes, offset, 0)
            return
        try:
            _fcntl.lockf(fd, _fcntl.LOCK_EX | _fcntl.LOCK_NB, nbytes, offset, 0)
        except OSError as error:
            raise OSError(36, "Resource deadlock avoided") from error  # what msvcrt raises on contention

    LK_UNLCK, LK_LOCK, LK_NBLCK = 0, 1, 2
    msvcrt = _types.ModuleType("msvcrt")
    msvcrt.locking, msvcrt.LK_UNLCK, msvcrt.LK_LOCK, msvcrt.LK_NBLCK, msvcrt.calls = locking, LK_UNLCK, LK_LOCK, LK_NBLCK, _calls
    _sys.modules["msvcrt"] = msvcrt
    _sys.modules["fcntl"] = None  # as on Windows: the lock takes its msvcrt branch
''')


@pytest.fixture
def windows(monkeypatch: pytest.MonkeyPatch) -> Any:
    """This process as Windows sees the lock: no fcntl, the stand-in msvcrt."""
    namespace: dict[str, Any] = {}
    real = sys.modules.get("fcntl")
    exec(FAKE_MSVCRT, namespace)  # the stand-in above
    msvcrt = sys.modules["msvcrt"]
    sys.modules["fcntl"] = real  # restored by monkeypatch below, then hidden again
    monkeypatch.setitem(sys.modules, "msvcrt", msvcrt)
    monkeypatch.setitem(sys.modules, "fcntl", None)
    return msvcrt


def test_lock_and_unlock_take_the_msvcrt_branch_and_keep_the_position(windows: Any, tmp_path: Path) -> None:
    with open(tmp_path / "k.lock", "a") as handle:
        handle.write("x" * 10)
        handle.flush()
        files.lock_file(handle)
        assert handle.tell() == 10  # where it was
        files.unlock_file(handle)
        assert handle.tell() == 10
    assert windows.calls == [(windows.LK_NBLCK, 0, 1), (windows.LK_UNLCK, 0, 1)]  # the first byte, both ways


def test_a_held_lock_is_waited_for_not_failed(windows: Any, tmp_path: Path) -> None:
    attempts = iter([OSError(36, "busy"), OSError(36, "busy"), None])
    real = windows.locking

    def busy_twice(fd: int, mode: int, nbytes: int) -> None:
        if mode == windows.LK_NBLCK and (error := next(attempts)) is not None:
            raise error
        real(fd, mode, nbytes)

    windows.locking = busy_twice
    with open(tmp_path / "k.lock", "a") as handle:
        files.lock_file(handle)  # two refusals, then the lock
        files.unlock_file(handle)


# The stand-in goes in after the imports: with an msvcrt module present, some libraries take
# their Windows paths at import time (subprocess's _winapi).
HOLDER = textwrap.dedent('''
    import sys, time
    from session_graph._base.files import lock_file, unlock_file
''') + FAKE_MSVCRT + textwrap.dedent('''
    handle = open(sys.argv[1], "a")
    lock_file(handle)
    print("locked", flush=True)
    sys.stdin.readline()  # held until the test says so (or the process is killed)
    print(time.time(), flush=True)  # released from here on
    unlock_file(handle)
''')

WAITER = textwrap.dedent('''
    import sys, time
    from session_graph._base.files import lock_file, unlock_file
''') + FAKE_MSVCRT + textwrap.dedent('''
    handle = open(sys.argv[1], "a")
    print("trying", flush=True)
    lock_file(handle)
    print(time.time(), flush=True)
    unlock_file(handle)
''')
ROOT = Path(__file__).resolve().parents[1]


def _start(script: str, lock: Path, first_line: str) -> subprocess.Popen[str]:
    process = subprocess.Popen([sys.executable, "-c", script, str(lock)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                               text=True, cwd=ROOT)
    assert process.stdout is not None and process.stdout.readline().strip() == first_line
    return process


def test_another_process_waits_until_the_holder_releases(tmp_path: Path) -> None:
    lock = tmp_path / "k.lock"
    holder = _start(HOLDER, lock, "locked")
    waiter = _start(WAITER, lock, "trying")
    try:
        time.sleep(0.5)
        assert waiter.poll() is None  # still waiting on the held lock
        released, _ = holder.communicate("go\n", timeout=60)
        acquired, _ = waiter.communicate(timeout=60)
        assert float(acquired) >= float(released)  # it got the lock only once the holder let go
    finally:
        for process in (holder, waiter):
            process.kill()
            process.wait(timeout=60)


def test_a_killed_holder_releases_the_lock(tmp_path: Path) -> None:
    lock = tmp_path / "k.lock"
    holder = _start(HOLDER, lock, "locked")
    waiter = _start(WAITER, lock, "trying")
    try:
        time.sleep(0.3)
        assert waiter.poll() is None
        holder.kill()  # as when a writer dies mid-save: the OS drops its lock
        holder.wait(timeout=60)
        acquired, _ = waiter.communicate(timeout=60)
        assert float(acquired) > 0 and waiter.returncode == 0
    finally:
        for process in (holder, waiter):
            process.kill()
            process.wait(timeout=60)


@pytest.mark.slow  # several processes: opt-in locally (SESSION_GRAPH_SLOW_TESTS=1), on in CI
def test_jsonl_writers_lose_nothing_on_the_windows_branch(tmp_path: Path) -> None:
    writer = textwrap.dedent('''
        import sys
        from session_graph.stores import SessionManager
        SessionManager(sys.argv[1]).get("warm-up")  # every lazy import done before msvcrt appears
    ''') + FAKE_MSVCRT + textwrap.dedent('''
        import sys
        from session_graph.stores import SessionManager
        for i in range(15):
            manager = SessionManager(sys.argv[1])
            session = manager.get_or_create("k")
            session.append_message({"role": "user", "content": f"{sys.argv[2]}-{i}"})
            manager.save(session)
            manager.close()
    ''')
    workers = [subprocess.Popen([sys.executable, "-c", writer, str(tmp_path / "store"), name], cwd=ROOT) for name in "abc"]
    assert [w.wait(timeout=300) for w in workers] == [0, 0, 0]
    from session_graph.stores import SessionManager

    session = SessionManager(tmp_path / "store").get("k")
    assert session is not None
    contents = sorted(m.content for m in session.full_chat_history)
    assert contents == sorted(f"{name}-{i}" for name in "abc" for i in range(15))  # every save kept, none twice
