"""The resize trace: one record per resize, kept on the session, saved and exported with it.

A record says which route the resize took (the nodes visited, in order, each with its time),
why (the decision), what it did (the window's messages, characters and tokens before and
after; the memo or summary size), what it cost (model calls, what was sent) and any error.

How a run is recorded (the node wrapper and the per-run recorder) is
:mod:`session_graph.resize.trace_recording`'s.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, fields
from itertools import islice
import logging
from typing import Any, overload

from session_graph.errors import DocumentError
from session_graph.resize.run import ResizeEvent

__all__ = ["SAVED_TRACE", "TRACE_LIMIT", "ResizeTrace", "TraceRecord", "record_of", "saved_trace"]

log = logging.getLogger(__name__)

TRACE_LIMIT = 500
"""How many resize records a session keeps (the newest); older ones are dropped."""
SAVED_TRACE = 100
"""How many of the newest records a store's state document carries (it is rewritten on every
save; 100 records are ~30 kB and ~0.3 ms). Exports carry all that the session keeps."""


@dataclass(frozen=True, slots=True)
class TraceRecord:
    """One resize: its route, decision, effect on the window, cost and error.

    Attributes:
        seq: this resize's number in the session's life (1, 2, ...; kept across saves).
        at: when it started (UTC, ISO 8601).
        turn: the session's turn count when it ran.
        history: messages in the full history when it ran (where it sits in the conversation).
        type: the decided resize type (``lite``, ``deep`` or a custom type).
        reason: the decision's reason (``every_n_turns``, ``max_messages_text_length``...).
        severity: the decision's severity.
        forced: whether ``resize(force=...)`` decided instead of the policy.
        route: the graph nodes visited, in order (a node visited per chunk repeats); the judge
            first, also when it decided before the run (a forced type or the default policy:
            the run's graph then starts at the decision's route, ``SessionCore._prepare``).
        node_ms: milliseconds spent in each visit, in the order of ``route``.
        total_ms: milliseconds of the whole run.
        messages_before: window messages before.
        messages_after: window messages after (equal to before when it did not commit).
        chars_before: window characters before.
        chars_after: window characters after.
        tokens_before: window tokens before with the counter in use (0 when counting chars).
        tokens_after: window tokens after (0 when counting chars).
        low_water: where a prune cuts to (tokens under a token budget, else characters: the
            budget or char limit times its ``prune_to_ratio``); the limits trigger a resize, this
            mark is what it leaves, so the next one is turns away (0: no such limit).
        context: ``"memo"``, ``"summary"`` or None: what the session keeps besides the window.
        context_chars_before: characters of the memo's JSON or of the summary before.
        context_chars_after: the same after.
        model_calls: memo or summary model (or handler) calls: folds and compressions.
        folded: messages handed to those calls to fold.
        sent_chars: characters sent: the prompts' text when the session's model built them,
            else the messages and the memo or summary handed to the handler.
        sent_tokens: tokens of the messages and the memo or summary handed over, with the
            counter in use (characters when the session counts characters).
        committed: whether the resize changed the session (False: it failed and changed nothing).
        error: the error it reported or raised, or None.
    """

    seq: int
    at: str
    turn: int
    history: int
    type: str | None
    reason: str | None
    severity: int | None
    forced: bool
    route: tuple[str, ...]
    node_ms: tuple[float, ...]
    total_ms: float
    messages_before: int
    messages_after: int
    chars_before: int
    chars_after: int
    tokens_before: int
    tokens_after: int
    low_water: int
    context: str | None
    context_chars_before: int
    context_chars_after: int
    model_calls: int
    folded: int
    sent_chars: int
    sent_tokens: int
    committed: bool
    error: str | None

    def as_dict(self) -> dict[str, Any]:
        """The record as a flat dict (``route`` and ``node_ms`` as lists)."""
        data = {name: getattr(self, name) for name in FIELDS}
        data["route"], data["node_ms"] = list(self.route), list(self.node_ms)
        return data

    def event(self) -> ResizeEvent:
        """The older, smaller ``ResizeEvent`` view of this record."""
        return ResizeEvent(
            self.turn, self.type or "", self.reason, self.severity, self.chars_before, self.chars_after,
            self.messages_before, self.messages_after, self.error,
        )

    def describe(self) -> str:
        """One line saying what the resize did."""
        what = f"{self.type}" + (f" ({self.reason})" if self.reason else "")
        line = (f"turn {self.turn}: {what}: window {self.messages_before} -> {self.messages_after} msgs, "
                f"{self.chars_before:,} -> {self.chars_after:,} chars")
        if self.tokens_before:
            line += f", {self.tokens_before:,} -> {self.tokens_after:,} tokens"
        if self.low_water:
            line += f" (low-water mark {self.low_water:,} {'tokens' if self.tokens_before else 'chars'})"
        if self.model_calls:
            line += f"; {self.model_calls} model call(s) folded {self.folded} msgs"
        if self.error:
            line += f"; error: {self.error[:120]}"
        return line


FIELDS = tuple(f.name for f in fields(TraceRecord))
_INTS = {f.name for f in fields(TraceRecord) if f.type == "int"}


_RECORD_FIELDS = tuple((f.name, TraceRecord.__dict__[f.name].__set__) for f in fields(TraceRecord))
_RECORD_NAMES = frozenset(name for name, _ in _RECORD_FIELDS)


def record_of(**values: Any) -> TraceRecord:
    """``TraceRecord(**values)``; given every field (a resize's record, made on every resize),
    made without the frozen dataclass's ``object.__setattr__`` per field (~2 of a resize's ~90 us)."""
    if values.keys() != _RECORD_NAMES:
        return TraceRecord(**values)
    record = object.__new__(TraceRecord)
    for name, put in _RECORD_FIELDS:
        put(record, values[name])
    return record


class ResizeTrace:
    """The newest ``TRACE_LIMIT`` resize records of a session, oldest first.

    Iterate it, index it (``trace[-1]``), or take ``records()``: a list of flat dicts that
    ``pandas.DataFrame(trace.records())`` takes as it is.
    """

    __slots__ = ("_added", "_dumped", "_records", "_rewrites", "_rows", "limit", "next_seq")

    def __init__(self, records: Iterator[TraceRecord] | list[TraceRecord] = (), limit: int = TRACE_LIMIT) -> None:
        self.limit = limit
        self._records: deque[TraceRecord] = deque(records, maxlen=limit)
        self.next_seq = (self._records[-1].seq + 1) if self._records else 1
        self._dumped: tuple[object, dict[str, Any]] | None = None
        self._rows: dict[int, tuple[TraceRecord, list[Any]]] = {}  # id -> (record, its dumped row)
        self._added = self._rewrites = 0  # the version ``mark`` reads

    def add(self, record: TraceRecord) -> TraceRecord:
        """Keep a record (the oldest is dropped past ``limit``)."""
        self._records.append(record)
        self._added += 1
        self.next_seq = max(self.next_seq, record.seq + 1)
        return record

    def replace(self, other: ResizeTrace) -> None:
        """Hold ``other``'s records instead of these (a load or an import)."""
        self._records = deque(other, maxlen=self.limit)
        self._rewrites += 1
        self.next_seq = other.next_seq

    def clear(self) -> None:
        """Forget every record (the session started over)."""
        self._records.clear()
        self._rewrites += 1
        self.next_seq = 1

    def merge(self, other: ResizeTrace) -> None:
        """Add ``other``'s records that this trace does not hold (another writer's), by start time."""
        held = {(r.at, r.turn, r.history) for r in self._records}
        extra = [r for r in other if (r.at, r.turn, r.history) not in held]
        if extra:
            merged = sorted([*self._records, *extra], key=lambda r: r.at)
            self._records = deque(merged, maxlen=self.limit)
            self._rewrites += 1
            self.next_seq = max(self.next_seq, other.next_seq)

    def mark(self) -> tuple[int, int]:
        """The trace's version (how often it was rewritten, how many records it was given):
        ``added_since`` tells from it what a store that saved the trace then lacks."""
        return self._rewrites, self._added

    def added_since(self, mark: tuple[int, int]) -> list[TraceRecord] | None:
        """The records added since ``mark`` (a ``mark()``), oldest first; None when the trace
        was replaced, cleared or merged since, or no longer holds them all (past ``limit``)."""
        rewrites, added = mark
        count = self._added - added
        if rewrites != self._rewrites or not 0 <= count <= len(self._records):
            return None
        return list(islice(reversed(self._records), count))[::-1]

    def __iter__(self) -> Iterator[TraceRecord]:
        return iter(self._records)

    def __len__(self) -> int:
        return len(self._records)

    @overload
    def __getitem__(self, index: int) -> TraceRecord: ...
    @overload
    def __getitem__(self, index: slice) -> list[TraceRecord]: ...
    def __getitem__(self, index: int | slice) -> TraceRecord | list[TraceRecord]:
        if isinstance(index, slice):
            return list(self._records)[index]
        return self._records[index]

    def __repr__(self) -> str:
        return f"ResizeTrace({len(self)} records, newest: {self._records[-1].describe() if self else None})"

    def records(self) -> list[dict[str, Any]]:
        """Every record as a flat dict, oldest first (a DataFrame takes the list directly)."""
        return [record.as_dict() for record in self._records]

    def events(self) -> list[ResizeEvent]:
        """The committed resizes as ``ResizeEvent`` (what ``session.resize_events`` returns)."""
        return [record.event() for record in self._records if record.committed]

    # -- saved form ------------------------------------------------------------------------
    def dump(self, newest: int | None = None) -> dict[str, Any]:
        """The trace (its ``newest`` records, or all) as JSON-safe rows under one list of field
        names, compact in documents; cached until the trace changes (stores dump it on every save)."""
        records = list(self._records)[-newest:] if newest else list(self._records)
        key = (newest, len(self._records), self._records[-1] if self._records else None, self._records[0] if self._records else None)
        if self._dumped is None or self._dumped[0] != key:
            known, rows, kept = self._rows, [], {}
            for r in records:  # a record's row is made once: a save after a resize dumps one new row
                entry = known.get(id(r))
                if entry is None or entry[0] is not r:
                    entry = (r, [_plain(getattr(r, name)) for name in FIELDS])
                kept[id(r)] = entry
                rows.append(entry[1])
            self._rows = kept
            self._dumped = (key, {"fields": list(FIELDS), "rows": rows})
        return self._dumped[1]

    @classmethod
    def load(cls, data: Any, where: str = "the document") -> ResizeTrace:
        """A trace from ``dump()`` output; unknown fields are ignored, missing ones are empty.

        Raises:
            DocumentError: ``data`` is not a dumped trace (naming what is wrong).
        """
        trace = cls()
        if data is None:
            return trace
        if not isinstance(data, Mapping) or not isinstance(data.get("fields"), list) or not isinstance(data.get("rows"), list):
            raise DocumentError(f"'trace' in {where} must be {{'fields': [...], 'rows': [[...], ...]}}, got {data!r:.80}.")
        names = data["fields"]
        for index, row in enumerate(data["rows"][-trace.limit :]):
            if not isinstance(row, list) or len(row) != len(names):
                raise DocumentError(f"'trace' row {index} in {where} must be a list of {len(names)} values, got {row!r:.80}.")
            values = dict(zip(names, row, strict=True))
            try:
                trace.add(_record(values))
            except (TypeError, ValueError) as error:
                raise DocumentError(f"'trace' row {index} in {where} is not a resize record: {error}.") from None
        return trace


def saved_trace(document: Mapping[str, Any], where: str) -> ResizeTrace:
    """The trace a store's state document carries; a damaged one is logged and left out (the
    trace only informs: it never keeps a session from loading)."""
    try:
        return ResizeTrace.load(document.get("trace"), where)
    except DocumentError as error:
        log.warning("%s: the saved resize trace is damaged and was left out: %s", where, error)
        return ResizeTrace()


def _plain(value: Any) -> Any:
    return list(value) if isinstance(value, tuple) else value


def _record(values: Mapping[str, Any]) -> TraceRecord:
    data: dict[str, Any] = {}
    for name in FIELDS:
        value = values.get(name)
        if name in ("route", "node_ms"):
            value = tuple(value or ())
            if name == "route" and not all(isinstance(v, str) for v in value):
                raise ValueError("route must list node names")
            if name == "node_ms":
                value = tuple(float(v) for v in value)
        elif name in _INTS or name == "total_ms":
            if value is not None and (isinstance(value, bool) or not isinstance(value, int | float)):
                raise ValueError(f"{name} must be a number, got {value!r:.40}")
            value = (float(value or 0) if name == "total_ms" else int(value or 0))
        elif name == "severity":
            if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
                raise ValueError(f"severity must be a whole number, got {value!r:.40}")
        elif name in ("forced", "committed"):
            value = bool(value) if name == "forced" else value is not False
        elif value is not None and not isinstance(value, str):
            raise ValueError(f"{name} must be text, got {value!r:.40}")
        data[name] = value
    return TraceRecord(**data)
