"""The session's own bookkeeping of its folds, kept beside the memo, never in it.

``SessionState.fold_records`` holds what the fold machinery remembers between resizes:

- ``fold_failure``: a failing fold's back-off (``backoff.py``);
- ``compression_refused``: the size a model would not compress at (``refused.py``).

It is saved, exported and merged under contention like the memo cursor; the model never sees
it. Documents written before it lived in the memo under the same keys: ``split_records``
reads them from there.
"""

from __future__ import annotations

from typing import Any

from session_graph.compression.backoff import FOLD_FAILURE
from session_graph.compression.refused import COMPRESSION_REFUSED

__all__ = ["RECORD_KEYS", "split_records"]

RECORD_KEYS = (FOLD_FAILURE, COMPRESSION_REFUSED)


def split_records(memo: dict[str, Any], records: dict[str, Any] | None = None) -> tuple[dict[str, Any], dict[str, Any]]:
    """``(memo without the fold records, the records)``: the records of an older document, kept
    in its memo, join ``records`` (which win where both have a key)."""
    old = {key: memo[key] for key in RECORD_KEYS if key in memo}
    if not old:
        return memo, dict(records or {})
    return {key: value for key, value in memo.items() if key not in old}, {**old, **(records or {})}
