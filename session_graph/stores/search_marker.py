"""The change marker of a JSONL tenant folder: when the search index may skip its rescan.

The folder's mtime moves on every save (the store replaces the session's meta file there, and
``JsonlSearch.appended`` / ``deleted`` bump it too), so an unchanged mtime means no session of
the tenant changed, and a query costs one stat instead of a listing and a stat per session.
An mtime younger than ``RACY`` when read is not trusted (a change in the same clock tick, or on a
file system with coarse timestamps, would leave it equal); ``RESCAN`` bounds how long a log
edited by hand (not through a store) can go unseen. A save within ``RACY / 4`` of the bump
this process made last leaves the marker as it is: a marker that young is trusted by no search
yet (the other ``3 RACY / 4`` cover timestamps up to 1.5 s coarse), so the next scan sees the
save anyway.
"""

from __future__ import annotations

import os
from pathlib import Path
import time

__all__ = ["RACY", "RESCAN", "bump", "marker", "trusted"]

RACY = 2.0
RESCAN = 5.0


def marker(folder: Path) -> int | None:
    """The folder's change marker (its mtime in ns), or None when it cannot be read."""
    try:
        return os.stat(folder).st_mtime_ns
    except OSError:
        return None


def trusted(value: int | None) -> int | None:
    """``value`` when it is old enough that a later change must move it, else None."""
    return value if value is not None and time.time() - value / 1e9 > RACY else None


def bump(folder: Path, bumped: dict[Path, float] | None = None) -> None:
    """Move the folder's change marker (searches in other processes rescan); ``bumped``: when
    this process last moved each folder's, so a save within ``RACY / 4`` of it costs no syscall."""
    now = time.time()  # before the utime: the marker is at least this young
    if bumped is not None and now - bumped.get(folder, -RACY) < RACY / 4:
        return
    try:
        os.utime(folder)
    except OSError:  # not ours to touch: the meta file's replacement still moves it
        return
    if bumped is not None:
        if len(bumped) > 1024:
            bumped.clear()
        bumped[folder] = now
