"""One resize run: invoke the graph on a snapshot of the state and build the state to commit.

The graph runs through LangGraph's Pregel loop, or node by node without it when the session
found the run plain and unobserved (``direct.select``: no user code in a node, no callbacks or
tracing; ``SESSION_GRAPH_RESIZE_EXECUTOR=pregel`` forces Pregel); both read the same compiled
graph and give the caller the same window, state, trace record and errors.

The session commits the result in one step, so a failure anywhere before that leaves it
as it was. Messages appended while the graph awaited a model join both histories.
"""

from __future__ import annotations

from collections.abc import Iterator
import contextlib
from contextvars import Token
from dataclasses import dataclass
import os
from typing import Any

from langchain_core.messages import BaseMessage
from langchain_core.runnables import RunnableConfig
from langchain_core.runnables.config import var_child_runnable_config
from langgraph.graph.state import CompiledStateGraph
from langgraph.runtime import Runtime

from session_graph._base.flow import adrive, drive
from session_graph.accounting.window import WindowTotals
from session_graph.compression.backoff import FOLD_FAILURE, cleared, failed
from session_graph.errors import HandlerResultError, MemoUpdateError
from session_graph.resize.direct import Plan, execute
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
                    decision: Decision | None = None, direct: Plan | None = None) -> ResizeOutcome:
    """Run a sync resize graph on ``state`` and build the state to commit.

    The graph streams each node's update (``stream_mode="updates"``) and the run's final state
    is the input with the updates applied in order: every field is a last-value channel, so
    that is what ``invoke`` returns, without LangGraph reading all the state's channels after
    every step (12% of a pruning resize). ``decision``: the judge's, made before the run (the
    graph is then one compiled to start at its route), or None for the graph's judge to decide.
    ``direct``: the graph's plan when the run needs no Pregel (``direct.select``): the same graph
    is then run node by node, without LangGraph's loop.
    """
    appended_before = len(state.full_chat_history)
    out = _run_input(state, decision)
    if direct is not None:
        runtime, token = _direct_runtime(context)
        try:
            drive(execute(direct, out, context, _limit(state), runtime))
        finally:
            var_child_runnable_config.reset(token)
        return _outcome(state, out, appended_before)
    with _own_run():
        for step in graph.stream(dict(out), context=context, config=_config(state, sync=True), stream_mode="updates"):
            _apply(out, step)
    return _outcome(state, out, appended_before)


async def run_resize(graph: CompiledStateGraph, state: SessionState, context: ResizeContext,
                     decision: Decision | None = None, direct: Plan | None = None) -> ResizeOutcome:
    """Run an async resize graph on ``state`` and build the state to commit (as ``run_resize_sync``)."""
    appended_before = len(state.full_chat_history)
    out = _run_input(state, decision)
    if direct is not None:
        runtime, token = _direct_runtime(context)
        try:
            await adrive(execute(direct, out, context, _limit(state), runtime))
        finally:
            var_child_runnable_config.reset(token)
        return _outcome(state, out, appended_before)
    with _own_run():
        async for step in graph.astream(dict(out), context=context, config=_config(state, sync=False), stream_mode="updates"):
            _apply(out, step)
    return _outcome(state, out, appended_before)


def _apply(out: dict[str, Any], step: Any) -> None:
    """One step's node updates (``{node: update}``) applied to the run's state ``out``."""
    for node, update in step.items():
        if node == _INTERRUPT:  # a root run without a checkpointer: LangGraph ends it with the interrupt
            out[_INTERRUPT] = update  # raised once the run is over (``_outcome``)
        elif update:
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


def _limit(state: SessionState) -> int:
    """The run's recursion limit: at most one memo chunk per message the memo has not folded, and room for the rest."""
    return len(state.full_chat_history) - state.memo_cursor + 25


def _config(state: SessionState, *, sync: bool) -> Any:
    if sync:
        return {"recursion_limit": _limit(state), "max_concurrency": _WORKERS}
    return {"recursion_limit": _limit(state)}


_RUNTIME_KEY = "__pregel_runtime"
"""LangGraph's configurable key of a run's ``Runtime`` (``langgraph._internal._constants``, not
public); ``tests/integrations/test_resize_in_agent_config.py`` fails if it moves."""
_CHECKPOINT_KEYS = frozenset({"checkpoint_ns", "checkpoint_id", "checkpoint_map"})
"""The enclosing graph's place in its checkpoints: with them the run would be its subgraph."""


def _kept(ambient: RunnableConfig | None) -> RunnableConfig | None:
    """What the run keeps of the enclosing run's config (``_own_run``), None outside one."""
    if not ambient:
        return None
    kept = RunnableConfig(callbacks=ambient.get("callbacks"))
    configurable = ambient.get("configurable")
    if configurable:
        kept["configurable"] = {key: value for key, value in configurable.items()
                                if key == _RUNTIME_KEY or not (key.startswith("__") or key in _CHECKPOINT_KEYS)}
    return kept


@contextlib.contextmanager
def _own_run() -> Iterator[None]:
    """The run as a root graph run whose callbacks are the enclosing run's.

    Inside a runnable (an agent's node) LangGraph merges the config that node left in the
    context (``var_child_runnable_config``) into the run's: its ``configurable`` (the agent's
    stream, checkpointer, runtime, task id) and its metadata. With them the resize graph is the
    agent's subgraph: ``agent.stream(..., subgraphs=True)`` received its updates, which hold the
    whole history. Kept: the callbacks, so tracing (LangSmith) and a user's handlers still see
    the run as a child run (their manager carries the enclosing run's tags and metadata); the
    user's ``configurable`` keys (``user_id``...: what ``MemoryConfig.for_run`` reads in a user's
    node or handler); and the runtime, for its store (not its stream writer: without the agent's
    stream this run makes its own). Dropped: LangGraph's own keys (stream, checkpointer, task
    id) and the enclosing checkpoint's place (``checkpoint_ns``...), which made it a subgraph."""
    token = var_child_runnable_config.set(_kept(var_child_runnable_config.get()))
    try:
        yield
    finally:
        var_child_runnable_config.reset(token)


def _direct_runtime(context: ResizeContext) -> tuple[Runtime[ResizeContext], Token[RunnableConfig | None]]:
    """A direct run's config (what ``_own_run`` keeps of the enclosing run's, set once) with its
    ``Runtime``, as Pregel's run of the graph would make it, in the config the nodes' code sees
    (``var_child_runnable_config``; the caller resets ``token`` after the run): a chat model's
    code calling LangGraph's ``get_stream_writer()`` or ``get_store()`` gets the run's writer (its
    writes go nowhere: the resize's own stream has no reader) and the enclosing runtime's store
    (None outside one)."""
    kept = _kept(var_child_runnable_config.get())
    if kept is None:
        kept, configurable = RunnableConfig(), {}
    else:
        configurable = kept.get("configurable") or {}  # _kept's own dict: added to in place
    runtime = Runtime(context=context, store=getattr(configurable.get(_RUNTIME_KEY), "store", None))
    configurable[_RUNTIME_KEY] = runtime
    kept["configurable"] = configurable
    return runtime, var_child_runnable_config.set(kept)


_INTERRUPT = "__interrupt__"


def _outcome(state: SessionState, out: dict[str, Any], appended_before: int) -> ResizeOutcome:
    if _INTERRUPT in out:
        raise HandlerResultError(
            f"a node of the resize graph called interrupt() ({out[_INTERRUPT]!r:.200}); a resize runs without a "
            "checkpointer and cannot pause: decide in a policy handler before the resize, or raise from the node."
        )
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
