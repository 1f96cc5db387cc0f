"""File-store primitives shared by the JSONL session store and the file memory store:
reversible file names for keys, a cross-process lock on an open file, reading back to a line.
"""

from __future__ import annotations

import hashlib
from typing import Any
from urllib.parse import unquote

__all__ = ["decode_name", "encode_name", "last_newline", "lock_file", "unlock_file"]

_SAFE = frozenset("abcdefghijklmnopqrstuvwxyz0123456789-_")


def encode_name(key: str) -> str:
    """The file stem of a key: reversible, collision-free, safe on every file system."""
    name = "".join(ch if ch in _SAFE else "".join(f"%{b:02X}" for b in ch.encode()) for ch in key)
    return name if len(name.encode()) <= 200 else "~" + hashlib.sha256(key.encode()).hexdigest()


def decode_name(name: str) -> str | None:
    """The key of a file stem, or None for a hashed name (read the key from the meta file)."""
    return None if name.startswith("~") else unquote(name)


def last_newline(handle: Any, size: int) -> int:
    """Offset just after the last newline before ``size`` (0 if there is none)."""
    position = size
    while position > 0:
        step = min(65536, position)
        position -= step
        handle.seek(position)
        chunk = handle.read(step)
        index = chunk.rfind(b"\n")
        if index >= 0:
            return position + index + 1
    return 0


def lock_file(handle: Any) -> None:
    """An exclusive lock on an open file that other processes respect, released by the OS when
    the holder dies: ``flock``; on Windows, ``msvcrt.locking`` on the file's first byte, polled
    (its blocking mode gives up after 10 s). The stores lock a separate ``.lock`` file, which
    holds no data, so Windows' mandatory byte locks never block a reader. The Windows branch
    runs in tests with a stand-in ``msvcrt`` (``tests/test_file_lock.py``)."""
    try:
        import fcntl
    except ImportError:  # Windows
        import msvcrt
        import time

        position = handle.tell()
        while True:
            try:
                handle.seek(0)
                msvcrt.locking(handle.fileno(), msvcrt.LK_NBLCK, 1)
                break
            except OSError:  # held by another process (or handle): wait and try again
                time.sleep(0.005)
        handle.seek(position)
        return
    fcntl.flock(handle, fcntl.LOCK_EX)


def unlock_file(handle: Any) -> None:
    """Release :func:`lock_file`."""
    try:
        import fcntl
    except ImportError:  # Windows
        import msvcrt

        position = handle.tell()
        handle.seek(0)
        msvcrt.locking(handle.fileno(), msvcrt.LK_UNLCK, 1)
        handle.seek(position)
        return
    fcntl.flock(handle, fcntl.LOCK_UN)
