"""One resize run: invoke the graph on a snapshot of the state and build the state to commit.

The session commits the result in one step, so a failure anywhere before that leaves it
as it was. Messages appended while the graph awaited a model join both histories.
"""

from __future__ import annotations

from dataclasses import dataclass
import os
from typing import Any

from langchain_core.messages import BaseMessage
from langgraph.graph.state import CompiledStateGraph

from session_graph.accounting.window import WindowTotals
from session_graph.compression.backoff import FOLD_FAILURE, cleared, failed
from session_graph.errors import MemoUpdateError
from session_graph.resize.policy import Decision
from session_graph.resize.state import ResizeContext, SessionState

__all__ = ["ResizeEvent", "ResizeOutcome", "run_resize", "run_resize_sync"]


@dataclass(frozen=True, slots=True)
class ResizeEvent:
    """One resize that ran: when, why, and what it did to the window."""

    turn: int
    type: str
    reason: str | None
    severity: int | None
    chars_before: int
    chars_after: int
    messages_before: int
    messages_after: int
    error: str | None = None

    @classmethod
    def of(cls, turn: int, decision: Decision, before: WindowTotals, after: WindowTotals, error: Exception | None) -> ResizeEvent:
        """The event of a resize that committed (``error``: a memo failure it reported)."""
        return cls(
            turn, decision["type"], decision.get("reason"), decision.get("severity"),
            before.chars, after.chars, before.count, after.count, None if error is None else str(error),
        )


@dataclass(frozen=True, slots=True)
class ResizeOutcome:
    """What a run produced: the state to commit (None: nothing to do), its decision, its error."""

    state: SessionState | None
    decision: Decision | None
    error: MemoUpdateError | None
    full_replaced: bool


def run_resize_sync(graph: CompiledStateGraph, state: SessionState, context: ResizeContext,
                    decision: Decision | None = None) -> ResizeOutcome:
    """Run a sync resize graph on ``state`` and build the state to commit.

    The graph streams each node's update (``stream_mode="updates"``) and the run's final state
    is the input with the updates applied in order: every field is a last-value channel, so
    that is what ``invoke`` returns, without LangGraph reading all the state's channels after
    every step (12% of a pruning resize). ``decision``: the judge's, made before the run (the
    graph is then one compiled to start at its route), or None for the graph's judge to decide.
    """
    appended_before = len(state.full_chat_history)
    out = _run_input(state, decision)
    for step in graph.stream(dict(out), context=context, config=_config(state, sync=True), stream_mode="updates"):
        _apply(out, step)
    return _outcome(state, out, appended_before)


async def run_resize(graph: CompiledStateGraph, state: SessionState, context: ResizeContext,
                     decision: Decision | None = None) -> ResizeOutcome:
    """Run an async resize graph on ``state`` and build the state to commit (as ``run_resize_sync``)."""
    appended_before = len(state.full_chat_history)
    out = _run_input(state, decision)
    async for step in graph.astream(dict(out), context=context, config=_config(state, sync=False), stream_mode="updates"):
        _apply(out, step)
    return _outcome(state, out, appended_before)


def _apply(out: dict[str, Any], step: Any) -> None:
    """One step's node updates (``{node: update}``) applied to the run's state ``out``."""
    for update in step.values():
        if update:
            out.update(update)


def _run_input(state: SessionState, decision: Decision | None) -> dict[str, Any]:
    out = {
        "id": state.id,
        "full_chat_history": state.full_chat_history,
        "current_chat_history": list(state.current_chat_history),
        "memo": state.memo,
        "settings": state.settings,
        "turns": state.turns,
        "last_resize_turn": state.last_resize_turn,
        "memo_cursor": state.memo_cursor,
        "memo_ahead": state.memo_ahead,
        "fold_records": state.fold_records,
    }
    if decision is not None:
        out["decision"] = decision
    return out


_WORKERS = min(32, (os.cpu_count() or 1) + 4)
"""A sync run's thread pool size: ``ThreadPoolExecutor``'s own default, which it would otherwise
read from ``os.cpu_count()`` (a system call, ~7 us) on every run."""


def _config(state: SessionState, *, sync: bool) -> Any:
    """The run's config. Its own ``thread_id`` makes LangGraph drop the ``configurable`` an
    enclosing run (an agent's node) left in the context (``ensure_config``): the run is a root
    run of its own, so an agent's ``stream(..., subgraphs=True)`` does not receive the resize's
    updates (which hold the whole history), its checkpointer and stream are not inherited, and
    there is less to copy per step. The callbacks are not in ``configurable``: tracing still
    sees the run as a child of the enclosing one."""
    pending = len(state.full_chat_history) - state.memo_cursor  # at most one memo chunk per pending message
    config: dict[str, Any] = {"recursion_limit": pending + 25, "configurable": {"thread_id": state.id}}
    if sync:
        config["max_concurrency"] = _WORKERS
    return config


def _outcome(state: SessionState, out: dict[str, Any], appended_before: int) -> ResizeOutcome:
    decision, error = out.get("decision"), out.get("error")
    if decision is None:
        return ResizeOutcome(None, None, None, False)
    late = state.full_chat_history[appended_before:]
    full = out["full_chat_history"]
    replaced = full is not state.full_chat_history
    if replaced:
        full = _with_late(full, late)
    memo = dict(out["memo"])
    records = dict(out.get("fold_records", state.fold_records))
    if error is None:
        records = cleared(records, state.memo_cursor, out["memo_cursor"])
        memo["last_resize"] = {"type": decision["type"], "turn": state.turns, "reason": decision.get("reason")}
    elif isinstance(error, MemoUpdateError):  # the model is retried after a back-off, not every turn
        records[FOLD_FAILURE] = failed(state.fold_records, out["memo_cursor"], state.turns)
    new_state = SessionState(
        id=state.id,
        full_chat_history=full,
        current_chat_history=_with_late(out["current_chat_history"], late),
        memo=memo,
        settings=state.settings,
        turns=state.turns,
        last_resize_turn=state.turns if error is None else state.last_resize_turn,
        memo_cursor=out["memo_cursor"],
        memo_ahead=out["memo_ahead"],
        archived_through=state.archived_through,
        usage=state.usage,
        archives=state.archives,
        fold_records=records,
    )
    return ResizeOutcome(new_state, decision, error, replaced)


def _with_late(messages: list[BaseMessage], late: list[BaseMessage]) -> list[BaseMessage]:
    """``messages`` followed by the late messages it does not hold yet (they can only be at its end)."""
    if not late:
        return list(messages)
    held = {m.id for m in messages[-len(late) - 64 :]}
    return [*messages, *(m for m in late if m.id not in held)]
