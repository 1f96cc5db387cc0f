"""The resize trace in the JSONL store's state lines: the records a save added, not the trace.

The meta file carries a session's saved trace (``ResizeTrace.dump``'s newest ``SAVED_TRACE``
rows); a save that appends (``JsonlStore.append_messages``) after a lite prune writes only the
rows added since the trace the store wrote last, as ``"trace+": {"fields": [...], "rows":
[...], "keep": n}`` in its state line, so the meta file need not be rewritten (nor the trace's
unchanged rows encoded again) for the trace to survive a crash, a close or another writer's
read: a reader replays it on the meta file's trace (``grow_trace``), keeping the newest ``keep``
rows, which is the trace the writer held. A trace that did not only grow at its end (merged,
cleared, replaced) has no such line (``trace_added`` says None): the meta file is rewritten.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["TRACE_ADDED", "grow_trace", "trace_added"]

TRACE_ADDED = "trace+"
"""The state line's field of the trace rows a save added."""


def _value(trace: Any) -> Mapping[str, Any] | None:
    if trace is None:
        return None
    value = trace.value() if callable(getattr(trace, "value", None)) else trace  # a LazyTrace: dumped now
    return value if isinstance(value, Mapping) else None


def trace_added(old: Any, new: Any) -> dict[str, Any] | None:
    """The ``"trace+"`` value that turns the saved trace ``old`` (None: none saved) into
    ``new`` (both ``ResizeTrace.dump`` documents, or ``LazyTrace``s); None when ``new`` is not
    ``old`` (its newest rows) grown by rows at its end."""
    before, after = _value(old), _value(new)
    if after is None:
        return None
    names, rows = after.get("fields"), after.get("rows")
    if not isinstance(names, list) or not isinstance(rows, list):
        return None
    known = before.get("rows") if before is not None else []
    if before is not None and (before.get("fields") != names or not isinstance(known, list)):
        return None
    start = 0
    if known:
        last = known[-1]
        for index in range(len(rows) - 1, -1, -1):  # where the old trace ends in the new one (rows are shared: found by identity)
            if rows[index] is last or rows[index] == last:
                start = index + 1
                break
        else:
            return None
        if start > len(known) or rows[:start] != known[len(known) - start :]:
            return None  # reordered or replaced: not the old trace's newest rows grown at their end
    return {"fields": names, "rows": rows[start:], "keep": len(rows)}


def grow_trace(trace: Any, added: Any) -> Any:
    """``trace`` (a saved trace, or None) with the ``"trace+"`` value ``added`` applied: its
    rows and the added ones, the newest ``keep``. A damaged ``added`` leaves ``trace`` as it
    was (the trace only informs: it never costs the rest of the state line)."""
    if not isinstance(added, Mapping):
        return trace
    names, rows, keep = added.get("fields"), added.get("rows"), added.get("keep")
    if not isinstance(names, list) or not isinstance(rows, list) or not isinstance(keep, int) or isinstance(keep, bool) or keep < 0:
        return trace
    base = trace if isinstance(trace, Mapping) and trace.get("fields") == names and isinstance(trace.get("rows"), list) else None
    merged = [*base["rows"], *rows] if base is not None else list(rows)
    return {"fields": names, "rows": merged[len(merged) - keep :] if keep else []}
