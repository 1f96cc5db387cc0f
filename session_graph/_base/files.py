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
    """An exclusive lock on an open file that other processes respect (flock; on Windows, msvcrt)."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows
        import msvcrt
        import time

        while True:
            try:
                handle.seek(0)
                msvcrt.locking(handle.fileno(), msvcrt.LK_NBLCK, 1)
                return
            except OSError:
                time.sleep(0.005)
    fcntl.flock(handle, fcntl.LOCK_EX)


def unlock_file(handle: Any) -> None:
    """Release :func:`lock_file`."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows
        import msvcrt

        handle.seek(0)
        msvcrt.locking(handle.fileno(), msvcrt.LK_UNLCK, 1)
        return
    fcntl.flock(handle, fcntl.LOCK_UN)
