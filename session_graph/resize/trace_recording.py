"""Recording one resize run into a :class:`~session_graph.resize.trace.TraceRecord`.

How it is recorded is independent of how the graph is invoked and of what the nodes do:
``graph.py`` wraps every node once with :func:`traced` (a ``perf_counter`` pair per visit),
and each run carries its own :class:`TraceRecorder` in ``ResizeContext.trace``; the recorder
also counts the calls of the memo and summary handlers it is given (:meth:`TraceRecorder.instrument`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
import dataclasses
import inspect
import logging
from time import perf_counter
from typing import Any

from langchain_core.messages import BaseMessage, SystemMessage

from session_graph._base.flow import Flow, call, drive
from session_graph._base.ids import utc_now
from session_graph.accounting.window import WindowTotals
from session_graph.compression.context import memo_for_model, memo_json
from session_graph.resize.run import ResizeOutcome
from session_graph.resize.state import ResizeContext, SessionState
from session_graph.resize.trace import TraceRecord, record_of
from session_graph.settings import Limits

__all__ = ["TraceRecorder", "started", "traced"]

log = logging.getLogger(__name__)


def started() -> float:
    """The clock a run's recorder reads (``TraceRecorder(start)``: a run timed from before its judge)."""
    return perf_counter()


class TraceRecorder:
    """What one resize run records while the graph runs; carried in ``ResizeContext.trace``."""

    __slots__ = ("_context", "_start", "at", "decision", "folded", "model_calls", "nodes", "sent_chars", "sent_tokens")

    def __init__(self, start: float | None = None) -> None:
        self.at = utc_now()
        self._start = perf_counter() if start is None else start  # a run's time includes its judge's, made before it
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
        """``context`` carrying this recorder, its memo and summary calls counted (a run's
        context is built so at once: ``Handlers.context(..., recorder)``)."""
        return self.bind(dataclasses.replace(
            context,
            trace=self,
            memo_update=self.counting(context.memo_update, fold=True),
            summarize=self.counting(context.summarize, fold=True),
            compress_memo=self.counting(context.compress_memo, fold=False),
            compress_summary=self.counting(context.compress_summary, fold=False),
        ))

    def bind(self, context: ResizeContext) -> ResizeContext:
        """Measure what the counted calls are handed with ``context``'s lookups; returns it."""
        self._context = context
        return context

    def counting(self, fn: Callable[..., Any] | None, *, fold: bool) -> Callable[..., Any] | None:
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
        record = record_of(  # TraceRecord(...), every field given
            seq=seq, at=self.at, turn=state.turns, history=len(state.full_chat_history),
            type=decision.get("type"), reason=decision.get("reason"), severity=decision.get("severity"), forced=forced,
            route=tuple(name for name, _ in self.nodes), node_ms=tuple(round(s * 1000, 3) for _, s in self.nodes),
            total_ms=round((perf_counter() - self._start) * 1000, 3),
            messages_before=before.count, messages_after=after.count if committed else before.count,
            chars_before=before.chars, chars_after=after.chars if committed else before.chars,
            tokens_before=before.tokens, tokens_after=after.tokens if committed else before.tokens,
            low_water=limits.prune_tokens if limits.tokens else limits.prune_chars,
            context=_context_kind(limits), context_chars_before=_context_chars(state, limits),
            context_chars_after=_context_chars(new, limits),
            model_calls=self.model_calls, folded=self.folded, sent_chars=self.sent_chars, sent_tokens=self.sent_tokens,
            committed=committed, error=None if error is None else f"{type(error).__name__}: {error}",
        )
        if error is not None:  # a failure that changed nothing, or a memo error that kept its progress
            log.warning("session %s: resize %s: %s", state.id, "stopped early" if committed else "failed", record.describe())
        elif log.isEnabledFor(logging.INFO):  # describe() only when it is logged: this runs on every resize
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
def _recorder(runtime: Any) -> Any:
    return getattr(getattr(runtime, "context", None), "trace", None)


def traced(name: str, node: Callable[..., Any]) -> Callable[..., Any]:
    """``node`` timed into the run's recorder (``runtime.context.trace``) on every visit.

    The wrapper takes ``(state, runtime)`` and passes ``runtime`` on only when ``node`` takes
    it, so a replacement node of one parameter keeps working. A visit that raises is recorded
    too (with no update). Plain ``try``/``finally``: it runs on every node visit of every resize.
    """
    try:
        wants_runtime = "runtime" in inspect.signature(node).parameters
    except (TypeError, ValueError):
        wants_runtime = True
    call = getattr(node, "__call__", None)  # noqa: B004 - an object whose __call__ is async
    if inspect.iscoroutinefunction(node) or inspect.iscoroutinefunction(call):

        async def run_async(state: Any, runtime: Any) -> Any:
            update, start = None, perf_counter()
            try:
                update = await (node(state, runtime) if wants_runtime else node(state))
                return update
            finally:
                recorder = _recorder(runtime)
                if recorder is not None:
                    recorder.visit(name, perf_counter() - start, update)

        wrapper: Callable[..., Any] = run_async
    else:

        def run_sync(state: Any, runtime: Any) -> Any:
            update, start = None, perf_counter()
            try:
                update = node(state, runtime) if wants_runtime else node(state)
                return update
            finally:
                recorder = _recorder(runtime)
                if recorder is not None:
                    recorder.visit(name, perf_counter() - start, update)

        wrapper = run_sync
    wrapper.__name__ = getattr(node, "__name__", name)
    wrapper.__doc__ = getattr(node, "__doc__", None)
    return wrapper
