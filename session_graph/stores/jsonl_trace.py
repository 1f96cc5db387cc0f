"""The resize trace in the JSONL store's state lines: the records a save added, not the trace.

The meta file carries a session's saved trace (``ResizeTrace.dump``'s newest ``SAVED_TRACE``
rows); a save whose trace grew (an appended one after a lite prune, ``JsonlStore.append_messages``,
or a full one, ``update``) writes only the rows added since the trace the store wrote last, as ``"trace+": {"fields": [...], "rows":
[...], "keep": n}`` in its state line, so the meta file need not be rewritten (nor the trace's
unchanged rows encoded again) for the trace to survive a crash, a close or another writer's
read: a reader replays it on the meta file's trace (``grow_trace``), keeping the newest ``keep``
rows, which is the trace the writer held. A trace that did not only grow at its end (merged,
cleared, replaced) has no such line (``trace_added`` says None): the meta file is rewritten.
The rows added are told by the trace's version (``ResizeTrace.mark``) when both traces are a
save's ``LazyTrace`` of one session, so the trace is not dumped to compare.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Any

__all__ = ["TRACE_ADDED", "LazyTrace", "grow_trace", "trace_added", "trace_of", "unknown"]

TRACE_ADDED = "trace+"
"""The state line's field of the trace rows a save added."""


class LazyTrace(Mapping[str, Any]):
    """A session's saved trace (``ResizeTrace.dump``'s document), dumped when first read: only
    the meta file carries the trace, and most saves do not write it, so a save after a resize
    hands this over instead of dumping the trace's records. ``source``: the ``ResizeTrace``,
    whose version (``mark``) is taken now, so what is dumped later is the trace as it was at
    this save (its records added since left out), and ``jsonl_trace.trace_added`` tells the
    rows a later save adds from the two versions, without a dump."""

    __slots__ = ("_dump", "_value", "mark", "newest", "source")

    def __init__(self, dump: Callable[[], dict[str, Any]], source: Any = None, newest: int | None = None) -> None:
        self._dump, self._value = dump, None
        self.source, self.newest = source, newest
        self.mark = source.mark() if source is not None else None

    def value(self) -> dict[str, Any]:
        if self._value is None:
            source = self.source
            later = source.added_since(self.mark) if source is not None and source.mark() != self.mark else None
            if later:  # records were added since this save: the trace without them (a rewrite: as it is now)
                held = list(source)
                self._value = type(source)(held[: len(held) - len(later)]).dump(self.newest)
            else:
                self._value = self._dump()
        return self._value

    def __getitem__(self, name: str) -> Any:
        return self.value()[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self.value())

    def __len__(self) -> int:
        return len(self.value())


def unknown(trace: Any) -> bool:
    """Whether ``trace`` is a ``LazyTrace`` not dumped yet whose trace was rewritten (replaced,
    cleared, merged) since its save: what that save held cannot be told any more (a dump now
    is today's trace), so it differs from any trace and no rows can be added to it."""
    return (isinstance(trace, LazyTrace) and trace._value is None and trace.source is not None
            and trace.source.mark()[0] != trace.mark[0])


def trace_of(document: Mapping[str, Any] | None) -> Any:
    """A state document's trace (a dump, or a ``LazyTrace``, not dumped to tell), None when it has none."""
    trace = (document or {}).get("trace")
    return trace if callable(getattr(trace, "value", None)) or trace else None


def _value(trace: Any) -> Mapping[str, Any] | None:
    if trace is None:
        return None
    value = trace.value() if callable(getattr(trace, "value", None)) else trace  # a LazyTrace: dumped now
    return value if isinstance(value, Mapping) else None


def trace_added(old: Any, new: Any) -> dict[str, Any] | None:
    """The ``"trace+"`` value that turns the saved trace ``old`` (None: none saved) into
    ``new`` (both ``ResizeTrace.dump`` documents, or ``LazyTrace``s); None when ``new`` is not
    ``old`` (its newest rows) grown by rows at its end."""
    if unknown(old):
        return None
    quick = _by_version(old, new)
    if quick is not None:
        return quick
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
        if start == len(rows) and start < len(known):
            return None  # its oldest rows gone, none added: a state line's rows cannot say that
    return {"fields": names, "rows": rows[start:], "keep": len(rows)}


def _by_version(old: Any, new: Any) -> dict[str, Any] | None:
    """``trace_added`` from two ``LazyTrace``s of one trace by their versions (``mark``): the rows
    of the records added between them only, nothing else dumped; None when that cannot tell
    (not two such, the trace rewritten or changed since ``new``: the rows are compared)."""
    source = getattr(new, "source", None)
    if source is None or getattr(old, "source", None) is not source or source.mark() != new.mark or new.newest is None:
        return None
    records = source.added_since(old.mark)
    if records is None:
        return None
    dumped = type(source)(records[-new.newest :] if new.newest else records).dump()
    return {"fields": dumped["fields"], "rows": dumped["rows"], "keep": min(len(source), new.newest)}


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
