"""Back-off for a failing memo or summary model: retry in 1, 2, 4... turns, window bounded meanwhile.

A fold that fails leaves the memo cursor where it was and reports the error. Without a
back-off every later resize (every turn) would ask the failing model again with the same,
growing prompt, and the prune, pinned at the cursor, would let the window grow without bound.
So the session records the failure under ``FOLD_FAILURE`` in its fold records
(``SessionState.fold_records``, beside the memo, never shown to the model; saved, exported and
merged with the session, so it survives a reload; see ``records.py``)::

    {"cursor": 12, "count": 3, "turn": 40, "retry": 44}

- The first failure is retried on the next resize (a transient error costs nothing).
- From the second failure in a row, automatic resizes skip the fold until turn
  ``turn + 2 ** (count - 1)`` (at most ``MAX_WAIT`` turns); ``resize(force=...)`` retries at once.
- From the second failure the prune is no longer pinned at the cursor: the window is cut to
  its limits (tokens, chars, message count) like lite mode. Nothing is lost: the full history
  keeps every message and the cursor stays, so once the model answers again the fold resumes
  at the cursor, reading the full history, in bounded chunks.
- The record goes once a resize folds all that waits without an error (a fold that fails
  after some progress keeps that progress and counts as a failure).
"""

from __future__ import annotations

from typing import Any

__all__ = ["FOLD_FAILURE", "MAX_WAIT", "cleared", "failed", "fold_suspended", "prune_unpinned"]

FOLD_FAILURE = "fold_failure"
MAX_WAIT = 64
"""The longest back-off, in turns."""


def _record(records: dict[str, Any]) -> dict[str, Any] | None:
    record = records.get(FOLD_FAILURE)
    return record if isinstance(record, dict) else None


def failed(records: dict[str, Any], cursor: int, turn: int) -> dict[str, Any]:
    """The failure record after a fold failed at ``cursor`` in ``turn`` (``records``: the fold records before the run)."""
    previous = _record(records)
    count = int(previous.get("count", 0)) + 1 if previous is not None else 1
    wait = 0 if count == 1 else min(MAX_WAIT, 2 ** (count - 1))
    return {"cursor": cursor, "count": count, "turn": turn, "retry": turn + wait}


def cleared(records: dict[str, Any], old_cursor: int, new_cursor: int) -> dict[str, Any]:
    """``records`` (the fold records) without the failure record once a fold without error moved the cursor (else as it is)."""
    if FOLD_FAILURE in records and new_cursor > old_cursor:
        return {key: value for key, value in records.items() if key != FOLD_FAILURE}
    return records


def fold_suspended(records: dict[str, Any], turns: int, force: Any) -> bool:
    """Whether an automatic resize skips the fold: a back-off is running (``force`` retries)."""
    record = _record(records)
    return record is not None and force in (False, None) and turns < int(record.get("retry", 0))


def prune_unpinned(records: dict[str, Any]) -> bool:
    """Whether the prune cuts to the limits past the cursor: the fold failed twice or more."""
    record = _record(records)
    return record is not None and int(record.get("count", 0)) >= 2
