"""The one place ids and clocks come from, so tests can patch them for stable snapshots."""

from __future__ import annotations

from datetime import UTC, datetime
import time
import uuid


def new_id() -> str:
    """A fresh id: a uuid4 in hex, as the reference session uses for its own id."""
    return uuid.uuid4().hex


_SECOND: tuple[int, str] = (-1, "")  # the last whole second formatted, and its text


def utc_now() -> str:
    """The current UTC time as ISO 8601 with a ``Z`` (``2026-01-31T12:00:00.000001Z``).

    Every appended message is stamped: the date and time of a second are formatted once,
    then only the microseconds (5x faster than ``datetime.isoformat``, the same text).
    """
    global _SECOND
    seconds, nanoseconds = divmod(time.time_ns(), 1_000_000_000)
    second = _SECOND
    if second[0] != seconds:
        second = _SECOND = (seconds, datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%dT%H:%M:%S"))
    return f"{second[1]}.{nanoseconds // 1000:06d}Z"
