"""The JSONL store's open files, held across saves: each session's lock file and log.

A save of an agent turn is a few hundred bytes; opening and closing the lock file and the log
around each one cost more than the write. So a store keeps, for the sessions it wrote lately
(``LIMIT``, least recently used dropped first), the lock file open (the cross-process ``flock``
is still taken and released on every write) and an append-only descriptor of the log. Neither is
trusted blindly:

- the lock: ``flock`` belongs to an open file, so two threads of this process on one held file
  would both get it; a per-file mutex makes them take turns first. Once locked, the held file is
  checked to still be the one at the path (its inode, read by ``fstat`` when it was opened,
  against a ``stat`` of the path: a lock file removed and
  made again by another process is another file, whose lock the others take); if not, it is
  opened again. A process forked from this one opens its own (the parent's would share locks):
  right after a fork the child drops what it inherited and gets new mutexes
  (``os.register_at_fork``), so a thread of the parent that held one at the fork, which does not
  exist in the child, cannot make the child wait forever; a held file also notes the fork count
  it was opened under (``forks``), so one made before a fork is never the child's (no ``getpid``
  per write: a system call).
- the log: used only while it is the file at the path, told by the inode the caller's ``stat``
  under the lock read (another process may delete a log and write a new one); else opened again.
  Its size after a write is the size that ``stat`` read plus the bytes written when the caller
  passes it (every writer appends under the lock; a foreign append is seen by the next write's
  ``stat``, whose size then differs from the state's), else asked of the file (``lseek``).

An open file of a file kept open cannot be reused by a new file (its inode stays allocated), so
the inode check is exact.
"""

from __future__ import annotations

from collections import OrderedDict
import contextlib
import os
from pathlib import Path
import threading
from typing import Any
import weakref

from session_graph._base.files import lock_file, unlock_file
from session_graph._base.forks import renew_after_fork
from session_graph.errors import StoreError

try:  # POSIX: the held lock file flocked by descriptor here (lock_file's import and frame per write skipped)
    import fcntl
except ImportError:  # pragma: no cover - Windows: _base/files' msvcrt lock
    fcntl = None  # type: ignore[assignment]

__all__ = ["HOLD_LOG", "LIMIT", "Held", "HeldFiles", "Locked", "log_status"]

LIMIT = 64
"""How many sessions' files a store keeps open (two descriptors each)."""

HOLD_LOG = os.name != "nt"
"""Whether a log stays open between saves: not on Windows, where an open file cannot be removed
(no ``FILE_SHARE_DELETE``), so another process could not delete or clear the session meanwhile."""
_FORKS = [0]  # children forked since import, in this process's line (os.register_at_fork)
_APPEND = os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0)


def _forked() -> None:
    _FORKS[0] += 1


if hasattr(os, "register_at_fork"):  # POSIX; elsewhere no fork
    os.register_at_fork(after_in_child=_forked)


def log_status(path: Path) -> tuple[int, tuple[int, int] | None]:
    """A log's size and ``(st_dev, st_ino)`` from one ``stat`` (0 and None when there is none)."""
    try:
        status = os.stat(path)
    except FileNotFoundError:
        return 0, None
    return status.st_size, (status.st_dev, status.st_ino)


class Held:
    """One session's held files: its lock file (and the mutex in front of it) and its log."""

    __slots__ = ("closed", "forks", "lock", "lock_inode", "log", "log_inode", "mutex")

    def __init__(self) -> None:
        self.mutex = threading.Lock()
        self.lock: Any = None
        self.lock_inode: tuple[int, int] | None = None  # the held lock file's, read once: an open file keeps its inode
        self.log: int | None = None
        self.log_inode: tuple[int, int] | None = None
        self.closed = False
        self.forks = _FORKS[0]  # a Held from before a fork is the parent's (as a pid would tell, without the system call)

    def append(self, path: Path, data: bytes, inode: tuple[int, int] | None, sync: bool, size: int | None = None) -> int:
        """Append ``data`` to the log at ``path`` (whose ``(st_dev, st_ino)`` and ``size`` the
        caller read under the lock, None: no log yet; ``size`` None: asked of the file after the
        write) in one write, flushed to disk when ``sync``; the log's size after it."""
        if self.log is not None and (inode is None or inode != self.log_inode):
            self.close_log()  # another file at the path now (or none): not ours to write
        if self.log is None:
            self.log = os.open(path, _APPEND, 0o666)
            status = os.fstat(self.log)
            self.log_inode = (status.st_dev, status.st_ino)
        try:
            view = memoryview(data)
            while view:  # a regular file takes it whole; a short write (a full disk) goes on or raises
                view = view[os.write(self.log, view):]
            if sync:
                os.fsync(self.log)
            return os.lseek(self.log, 0, os.SEEK_CUR) if size is None or inode is None else size + len(data)
        except OSError:
            self.close_log()
            raise
        finally:
            if not HOLD_LOG:
                self.close_log()

    def close_log(self) -> None:
        """Close the held log (before the file is removed: Windows cannot remove an open file)."""
        if self.log is not None:
            with contextlib.suppress(OSError):
                os.close(self.log)
        self.log, self.log_inode = None, None

    def close(self) -> None:
        self.close_log()
        if self.lock is not None:
            with contextlib.suppress(OSError):
                self.lock.close()
            self.lock = None
        self.closed = True


class HeldFiles:
    """The held files of one store's sessions, by lock path (see the module docstring)."""

    def __init__(self, limit: int = LIMIT) -> None:
        self.limit = limit
        self._entries: OrderedDict[Path, Held] = OrderedDict()
        self._guard = threading.Lock()
        weakref.finalize(self, _close_all, self._entries)  # a store dropped without close() leaks no descriptor
        renew_after_fork(self)

    def _after_fork(self) -> None:
        """In a forked child: the parent's files and mutexes are not this process's (a thread that
        held one is gone); drop them, closing this process's copies of the descriptors."""
        self._guard = threading.Lock()
        entries = list(self._entries.values())
        self._entries.clear()
        for entry in entries:
            entry.mutex = threading.Lock()
            entry.close()

    def _entry(self, path: Path) -> Held:
        with self._guard:
            entry = self._entries.get(path)
            if entry is None or entry.forks != _FORKS[0]:  # a forked child never shares the parent's files
                entry = self._entries[path] = Held()
            else:
                self._entries.move_to_end(path)
            if len(self._entries) > self.limit:
                for old in [p for p in self._entries if p != path][: len(self._entries) - self.limit]:
                    held = self._entries[old]
                    if held.mutex.acquire(blocking=False):  # one in use stays until its write is done
                        del self._entries[old]
                        held.close()
                        held.mutex.release()
            return entry

    def locked(self, path: Path, key: str, root: Path) -> Locked:
        """The session's held files, with its lock file locked (threads of this process and other
        processes alike) until the block ends."""
        return Locked(self, path, key, root)

    @staticmethod
    def _lock(entry: Held, path: Path, key: str, root: Path) -> None:
        for _ in range(100):
            if entry.lock is None:
                try:
                    try:
                        entry.lock = open(path, "ab")  # noqa: SIM115 - held across saves, closed by close()
                    except FileNotFoundError:  # the tenant's folder is not there yet
                        path.parent.mkdir(parents=True, exist_ok=True)
                        entry.lock = open(path, "ab")  # noqa: SIM115
                except OSError as error:
                    raise StoreError(f"cannot lock session {key!r} in {root}: {error}") from error
                held = os.fstat(entry.lock.fileno())
                entry.lock_inode = (held.st_dev, held.st_ino)
            if fcntl is not None:
                fcntl.flock(entry.lock.fileno(), fcntl.LOCK_EX)
            else:  # pragma: no cover
                lock_file(entry.lock)
            try:
                there = os.stat(path)
                if entry.lock_inode == (there.st_dev, there.st_ino):
                    return
            except FileNotFoundError:
                pass
            except BaseException:  # an interrupted stat, a permission error: not held on by the open file
                unlock_file(entry.lock)
                raise
            unlock_file(entry.lock)  # removed or replaced since it was opened: lock the file at the path
            entry.lock.close()
            entry.lock = None
        raise StoreError(f"cannot lock session {key!r} in {root}: its lock file keeps being replaced.")

    def forget(self, path: Path) -> None:
        """Close a session's held files (it was deleted); one in use (the caller's own, under the
        lock) is closed when its holder is done."""
        with self._guard:
            entry = self._entries.pop(path, None)
        if entry is not None and entry.mutex.acquire(blocking=False):
            entry.close()
            entry.mutex.release()

    def close(self) -> None:
        """Close every held file not in use."""
        with self._guard:
            entries = list(self._entries.values())
            self._entries.clear()
        for entry in entries:
            if entry.mutex.acquire(blocking=False):
                entry.close()
                entry.mutex.release()


class Locked:
    """``HeldFiles.locked``'s block: a class, not a generator (one of each per write)."""

    __slots__ = ("entry", "files", "key", "path", "root")

    def __init__(self, files: HeldFiles, path: Path, key: str, root: Path) -> None:
        self.files, self.path, self.key, self.root = files, path, key, root
        self.entry: Held | None = None

    def __enter__(self) -> Held:
        files, path = self.files, self.path
        while True:
            entry = files._entry(path)
            entry.mutex.acquire()
            if not entry.closed:
                break
            entry.mutex.release()  # dropped from the cache meanwhile: take the one there now
        try:
            files._lock(entry, path, self.key, self.root)
        except BaseException:
            self._release(entry)
            raise
        self.entry = entry
        return entry

    def __exit__(self, *exc: object) -> None:
        entry, self.entry = self.entry, None
        assert entry is not None
        try:
            if fcntl is not None:
                fcntl.flock(entry.lock.fileno(), fcntl.LOCK_UN)
            else:  # pragma: no cover
                unlock_file(entry.lock)
        finally:
            self._release(entry)

    def _release(self, entry: Held) -> None:
        files = self.files
        with files._guard:
            dropped = files._entries.get(self.path) is not entry
        if dropped:  # forgotten (its session deleted) or replaced while in use: closed by its holder
            entry.close()
        entry.mutex.release()


def _close_all(entries: OrderedDict[Path, Held]) -> None:
    """Close every held file of a store that is gone (nothing can be using them)."""
    for entry in list(entries.values()):
        entry.close()
    entries.clear()
