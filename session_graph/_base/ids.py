"""The one place ids and clocks come from, so tests can patch them for stable snapshots."""

from __future__ import annotations

from datetime import UTC, datetime
import uuid


def new_id() -> str:
    """A fresh id: a uuid4 in hex, as the reference session uses for its own id."""
    return uuid.uuid4().hex


def utc_now() -> str:
    """The current UTC time as ISO 8601 with a ``Z``."""
    return datetime.now(UTC).isoformat(timespec="microseconds").replace("+00:00", "Z")
