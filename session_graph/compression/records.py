"""The session's own bookkeeping of its folds, kept beside the memo, never in it.

``SessionState.fold_records`` holds what the fold machinery remembers between resizes:

- ``fold_failure``: a failing fold's back-off (``backoff.py``);
- ``compression_refused``: the size a model would not compress at (``refused.py``).

It is saved, exported and merged under contention like the memo cursor; the model never sees
it. Documents written before it lived in the memo under the same keys: ``split_records``
reads them from there. ``checked_records`` sorts out entries of the wrong shape (a hand-edited
or damaged document): a document import refuses them, a store drops them (bookkeeping only: the
back-off or the refusal starts over), so no later resize fails on them.
"""

from __future__ import annotations

from typing import Any

from session_graph.compression.backoff import FOLD_FAILURE
from session_graph.compression.refused import COMPRESSION_REFUSED

__all__ = ["RECORD_KEYS", "checked_records", "split_records"]

RECORD_KEYS = (FOLD_FAILURE, COMPRESSION_REFUSED)
_FAILURE_FIELDS = ("cursor", "count", "turn", "retry")


def _count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def checked_records(records: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """``(records without the entries of the wrong shape, what is wrong with each)``:
    ``compression_refused`` is a whole number >= 0; ``fold_failure`` an object whose
    ``cursor``, ``count``, ``turn`` and ``retry`` are whole numbers >= 0. Other keys are kept."""
    problems: dict[str, str] = {}
    if COMPRESSION_REFUSED in records and not _count(records[COMPRESSION_REFUSED]):
        problems[COMPRESSION_REFUSED] = f"must be a whole number >= 0, got {records[COMPRESSION_REFUSED]!r:.80}"
    failure = records.get(FOLD_FAILURE)
    if FOLD_FAILURE in records and not (isinstance(failure, dict)
                                        and all(_count(failure[name]) for name in _FAILURE_FIELDS if name in failure)):
        problems[FOLD_FAILURE] = f"must be an object of whole numbers >= 0 ({', '.join(_FAILURE_FIELDS)}), got {failure!r:.80}"
    if not problems:
        return records, []
    clean = {key: value for key, value in records.items() if key not in problems}
    return clean, [f"{key!r} {why}" for key, why in problems.items()]


def split_records(memo: dict[str, Any], records: dict[str, Any] | None = None) -> tuple[dict[str, Any], dict[str, Any]]:
    """``(memo without the fold records, the records)``: the records of an older document, kept
    in its memo, join ``records`` (which win where both have a key)."""
    old = {key: memo[key] for key in RECORD_KEYS if key in memo}
    if not old:
        return memo, dict(records or {})
    return {key: value for key, value in memo.items() if key not in old}, {**old, **(records or {})}
