"""The resize trace: one record per resize, kept on the session, saved and exported with it.

A record says which route the resize took (the nodes visited, in order, each with its time),
why (the decision), what it did (the window's messages, characters and tokens before and
after; the memo or summary size), what it cost (model calls, what was sent) and any error.

How it is recorded is independent of how the graph is invoked and of what the nodes do:
``graph.py`` wraps every node once with :func:`traced` (a ``perf_counter`` pair per visit),
and each run carries its own :class:`TraceRecorder` in ``ResizeContext.trace``; the recorder
also counts the calls of the memo and summary handlers it is given (:meth:`TraceRecorder.instrument`).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
import dataclasses
from dataclasses import dataclass, fields
import inspect
import logging
from time import perf_counter
from typing import Any, overload

from langchain_core.messages import BaseMessage, SystemMessage

from session_graph._flow import Flow, call, drive
from session_graph._ids import utc_now
from session_graph.context import memo_for_model, memo_json
from session_graph.errors import DocumentError
from session_graph.resize_run import ResizeEvent, ResizeOutcome
from session_graph.settings import Limits
from session_graph.state import ResizeContext, SessionState
from session_graph.window import WindowTotals

__all__ = ["SAVED_TRACE", "TRACE_LIMIT", "ResizeTrace", "TraceRecord", "TraceRecorder", "saved_trace", "traced"]

log = logging.getLogger("session_graph")

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
        route: the graph nodes visited, in order (a node visited per chunk repeats).
        node_ms: milliseconds spent in each visit, in the order of ``route``.
        total_ms: milliseconds of the whole run.
        messages_before: window messages before.
        messages_after: window messages after (equal to before when it did not commit).
        chars_before: window characters before.
        chars_after: window characters after.
        tokens_before: window tokens before with the counter in use (0 when counting chars).
        tokens_after: window tokens after (0 when counting chars).
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
        if self.model_calls:
            line += f"; {self.model_calls} model call(s) folded {self.folded} msgs"
        if self.error:
            line += f"; error: {self.error[:120]}"
        return line


FIELDS = tuple(f.name for f in fields(TraceRecord))
_INTS = {f.name for f in fields(TraceRecord) if f.type == "int"}


class ResizeTrace:
    """The newest ``TRACE_LIMIT`` resize records of a session, oldest first.

    Iterate it, index it (``trace[-1]``), or take ``records()``: a list of flat dicts that
    ``pandas.DataFrame(trace.records())`` takes as it is.
    """

    __slots__ = ("_dumped", "_records", "limit", "next_seq")

    def __init__(self, records: Iterator[TraceRecord] | list[TraceRecord] = (), limit: int = TRACE_LIMIT) -> None:
        self.limit = limit
        self._records: deque[TraceRecord] = deque(records, maxlen=limit)
        self.next_seq = (self._records[-1].seq + 1) if self._records else 1
        self._dumped: tuple[object, dict[str, Any]] | None = None

    def add(self, record: TraceRecord) -> TraceRecord:
        """Keep a record (the oldest is dropped past ``limit``)."""
        self._records.append(record)
        self.next_seq = max(self.next_seq, record.seq + 1)
        return record

    def replace(self, other: ResizeTrace) -> None:
        """Hold ``other``'s records instead of these (a load or an import)."""
        self._records = deque(other, maxlen=self.limit)
        self.next_seq = other.next_seq

    def clear(self) -> None:
        """Forget every record (the session started over)."""
        self._records.clear()
        self.next_seq = 1

    def merge(self, other: ResizeTrace) -> None:
        """Add ``other``'s records that this trace does not hold (another writer's), by start time."""
        held = {(r.at, r.turn, r.history) for r in self._records}
        extra = [r for r in other if (r.at, r.turn, r.history) not in held]
        if extra:
            merged = sorted([*self._records, *extra], key=lambda r: r.at)
            self._records = deque(merged, maxlen=self.limit)
            self.next_seq = max(self.next_seq, other.next_seq)

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
            rows = [[_plain(getattr(r, name)) for name in FIELDS] for r in records]
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


# -- recording one run -----------------------------------------------------------------------
class TraceRecorder:
    """What one resize run records while the graph runs; carried in ``ResizeContext.trace``."""

    __slots__ = ("_context", "_start", "at", "decision", "folded", "model_calls", "nodes", "sent_chars", "sent_tokens")

    def __init__(self) -> None:
        self.at = utc_now()
        self._start = perf_counter()
        self.nodes: list[tuple[str, float]] = []
        self.decision: Any = None
        self.model_calls = self.folded = self.sent_chars = self.sent_tokens = 0
        self._context: ResizeContext | None = None

    def visit(self, name: str, seconds: float, update: Any) -> None:
        """A node ran for ``seconds`` and returned ``update`` (the judge's holds the decision)."""
        self.nodes.append((name, seconds))
        if isinstance(update, Mapping) and "decision" in update:
            self.decision = update["decision"]

    def instrument(self, context: ResizeContext) -> ResizeContext:
        """``context`` carrying this recorder, its memo and summary calls counted."""
        self._context = context
        return dataclasses.replace(
            context,
            trace=self,
            memo_update=self._counting(context.memo_update, fold=True),
            summarize=self._counting(context.summarize, fold=True),
            compress_memo=self._counting(context.compress_memo, fold=False),
            compress_summary=self._counting(context.compress_summary, fold=False),
        )

    def _counting(self, fn: Callable[..., Any] | None, *, fold: bool) -> Callable[..., Any] | None:
        """``fn`` counted into this recorder; it stays a flow (``_flow.call`` runs it inline
        with the graph's driver: sync from sync code, async from async code)."""
        if fn is None:
            return None
        owner = getattr(fn, "__self__", fn)  # the session's model updater counts its prompts' chars

        def flow(*args: Any) -> Flow[Any]:
            before = getattr(owner, "sent_chars", None)
            self.model_calls += 1
            try:
                return (yield from call(fn, *args))
            finally:
                chars, tokens, folded = self._handed(args, fold)
                after = getattr(owner, "sent_chars", None)
                exact = isinstance(before, int) and isinstance(after, int)
                self.sent_chars += after - before if exact else chars  # type: ignore[operator]
                self.sent_tokens += tokens
                self.folded += folded

        def counted(*args: Any) -> Any:
            return drive(flow(*args))

        counted.flow = flow  # type: ignore[attr-defined]
        return counted

    def _handed(self, args: tuple[Any, ...], fold: bool) -> tuple[int, int, int]:
        """Chars, tokens and messages of what a call was handed (the memo or summary, the messages)."""
        ctx = self._context
        if ctx is None or not args:
            return 0, 0, 0
        value = args[0]
        text = value if isinstance(value, str) else memo_json(value) if isinstance(value, dict) else ""
        chars = len(text)
        tokens = ctx.measure_context(SystemMessage(content=text)) if text and ctx.counter is not None else chars
        messages = [m for m in args[1] if isinstance(m, BaseMessage)] if fold and len(args) > 1 and isinstance(args[1], list) else []
        chars += sum(ctx.size(m) for m in messages)
        tokens += sum(ctx.tokens(m) for m in messages)
        return chars, tokens, len(messages)

    def record(
        self,
        seq: int,
        state: SessionState,
        before: WindowTotals,
        after: WindowTotals,
        outcome: ResizeOutcome | None,
        error: BaseException | None,
        forced: bool,
    ) -> TraceRecord | None:
        """The record of this run (None when it decided not to resize)."""
        decision = outcome.decision if outcome is not None else self.decision
        if decision is None and error is None:
            return None
        decision = decision or {}
        limits = state.settings.resolved()
        new = outcome.state if outcome is not None and outcome.state is not None else state
        committed = outcome is not None and outcome.state is not None
        record = TraceRecord(
            seq=seq, at=self.at, turn=state.turns, history=len(state.full_chat_history),
            type=decision.get("type"), reason=decision.get("reason"), severity=decision.get("severity"), forced=forced,
            route=tuple(name for name, _ in self.nodes), node_ms=tuple(round(s * 1000, 3) for _, s in self.nodes),
            total_ms=round((perf_counter() - self._start) * 1000, 3),
            messages_before=before.count, messages_after=after.count if committed else before.count,
            chars_before=before.chars, chars_after=after.chars if committed else before.chars,
            tokens_before=before.tokens, tokens_after=after.tokens if committed else before.tokens,
            context=_context_kind(limits), context_chars_before=_context_chars(state, limits),
            context_chars_after=_context_chars(new, limits),
            model_calls=self.model_calls, folded=self.folded, sent_chars=self.sent_chars, sent_tokens=self.sent_tokens,
            committed=committed, error=None if error is None else f"{type(error).__name__}: {error}",
        )
        if error is not None:  # a failure that changed nothing, or a memo error that kept its progress
            log.warning("session %s: resize %s: %s", state.id, "stopped early" if committed else "failed", record.describe())
        else:
            log.info("session %s: resize %s", state.id, record.describe())
        return record


def _context_kind(limits: Limits) -> str | None:
    return "summary" if limits.summary_enabled else "memo" if limits.memo_enabled else None


def _context_chars(state: SessionState, limits: Limits) -> int:
    if limits.summary_enabled:
        return len(state.memo.get("summary") or "")
    if limits.memo_enabled:
        memo = memo_for_model(state.memo)
        return len(memo_json(memo)) if memo else 0
    return 0


# -- the node wrapper graph.py applies ----------------------------------------------------
@contextmanager
def _timed(name: str, runtime: Any) -> Iterator[list[Any]]:
    recorder = getattr(getattr(runtime, "context", None), "trace", None)
    out: list[Any] = [None]
    start = perf_counter()
    try:
        yield out
    finally:
        if recorder is not None:
            recorder.visit(name, perf_counter() - start, out[0])


def traced(name: str, node: Callable[..., Any]) -> Callable[..., Any]:
    """``node`` timed into the run's recorder (``runtime.context.trace``) on every visit.

    The wrapper takes ``(state, runtime)`` and passes ``runtime`` on only when ``node`` takes
    it, so a replacement node of one parameter keeps working.
    """
    try:
        wants_runtime = "runtime" in inspect.signature(node).parameters
    except (TypeError, ValueError):
        wants_runtime = True
    call = getattr(node, "__call__", None)  # noqa: B004 - an object whose __call__ is async
    if inspect.iscoroutinefunction(node) or inspect.iscoroutinefunction(call):

        async def run_async(state: Any, runtime: Any) -> Any:
            with _timed(name, runtime) as out:
                out[0] = await (node(state, runtime) if wants_runtime else node(state))
            return out[0]

        wrapper: Callable[..., Any] = run_async
    else:

        def run_sync(state: Any, runtime: Any) -> Any:
            with _timed(name, runtime) as out:
                out[0] = node(state, runtime) if wants_runtime else node(state)
            return out[0]

        wrapper = run_sync
    wrapper.__name__ = getattr(node, "__name__", name)
    wrapper.__doc__ = getattr(node, "__doc__", None)
    return wrapper
