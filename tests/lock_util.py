"""The flock probe shared by the held-files tests (POSIX only: it imports ``fcntl``)."""

from __future__ import annotations

import fcntl
from pathlib import Path


def held_by_others(lock: Path) -> bool:
    """Whether another open file of ``lock`` cannot take its flock now (someone holds it): as
    another process sees the lock."""
    with open(lock, "ab") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        fcntl.flock(handle, fcntl.LOCK_UN)
        return False
