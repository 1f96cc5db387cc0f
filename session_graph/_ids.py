"""The one place ids and clocks come from, so tests can patch them for stable snapshots."""

from __future__ import annotations

import uuid


def new_id() -> str:
    """A fresh id: a uuid4 in hex, as the reference session uses for its own id."""
    return uuid.uuid4().hex
