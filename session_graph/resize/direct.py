"""A resize run without Pregel: the compiled resize graph interpreted node by node.

LangGraph's Pregel loop (checkpoint, channels, tasks, a callback manager per run and per node)
costs ~85-90% of a lite prune that drops a few messages. When nothing needs that machinery, a
run is executed here instead, on THE SAME compiled graph: its builder's nodes (the callables
``graph.py`` added, wrapped by ``trace_recording.traced`` and, for a user's node,
``node_checks``), its edges and conditional branches (``graph.py`` stays the only place edges
live), the run's ``Runtime`` holding the ``ResizeContext`` and the enclosing run's store, also in
the config the nodes' code sees (``run._direct_runtime``: LangGraph's ``get_stream_writer`` and
``get_store`` answer as in Pregel's run). Every state field is a last-value channel, so a node sees ``SessionState(**values)`` and its dict update replaces the fields it
names (keys that are not fields are dropped, as LangGraph drops them); a branch reads the state
after its node's update; the recursion limit stops the run as Pregel's does (the limit reached:
``GraphRecursionError``, same message); a node's error propagates unchanged, with a note
naming the task (Pregel's note also holds a task id, which this run has none of).

The rule, ``select``: a run is direct when it is unobserved and plain, else Pregel:
- no user code runs in a node: no node override, no resize handler, no policy, memo, summary or
  attachment handler on the compiled graph, and the session's model is a chat model (bound,
  retried or with fallbacks), not a Runnable of the user's (a user's code may call ``interrupt()``,
  ``get_config()``, ``get_store()`` or a stream writer, which need Pregel's run);
- no callbacks: the enclosing run's callbacks, LangSmith tracing (env or context), global debug
  or verbose, configure hooks: whatever ``CallbackManager.configure`` would hand the run, and the
  session's chat model's own callbacks, in a binding's config or made by its factories
  (``with_listeners``): they would see its run as a child of a node's run;
- ``SESSION_GRAPH_RESIZE_EXECUTOR=pregel`` is not set (a switch for debugging and tests).
What a caller gets is the same either way: ``resize()``'s window, the state committed, the trace
record (route, model calls, sizes), the events, the errors; the run is a root run in both.
Sync and async are one flow (``_base/flow.py``): a sync graph's nodes are driven by ``drive``,
an async graph's by ``adrive``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, fields
import inspect
import os
from typing import Any, Protocol
import weakref

from langchain_core.callbacks import CallbackManager
from langchain_core.language_models import BaseLanguageModel
from langchain_core.runnables import RunnableWithFallbacks
from langchain_core.runnables.base import RunnableBindingBase
from langchain_core.runnables.config import var_child_runnable_config
from langgraph.errors import ErrorCode, GraphRecursionError, InvalidUpdateError, create_error_message
from langgraph.graph import END, START
from langgraph.graph.state import CompiledStateGraph
from langgraph.runtime import Runtime

from session_graph._base.flow import Call, Flow
from session_graph.errors import ConfigurationError
from session_graph.resize.state import ResizeContext, SessionState

__all__ = ["FORCE_PREGEL_ENV", "Plan", "Plugged", "execute", "plan_of", "select", "unobserved"]

FORCE_PREGEL_ENV = "SESSION_GRAPH_RESIZE_EXECUTOR"
"""Set to ``pregel`` to run every resize through LangGraph's Pregel loop (debugging, tests); unset or
``auto``: the default choice; any other value is a ``ConfigurationError`` at the next resize."""
_FIELDS = frozenset(f.name for f in fields(SessionState))


class Plugged(Protocol):
    """What ``select`` reads of a session's handlers (``resize.handlers.Handlers``)."""

    policy: Any
    overrides: Mapping[str, Any]
    resize: Mapping[str, Any]
    memo_update: Any
    summary: Any
    attachment_summary: Any
    model: Any


@dataclass(frozen=True, slots=True)
class Plan:
    """A compiled resize graph as the direct run reads it: its nodes, first node and next-node rules."""

    nodes: Mapping[str, Callable[..., Any]]
    first: str
    edges: Mapping[str, str]
    branches: Mapping[str, tuple[Callable[..., Any], Mapping[Any, str] | None]]


_PLANS: weakref.WeakKeyDictionary[CompiledStateGraph[Any, Any, Any, Any], Plan | None] = weakref.WeakKeyDictionary()


def plan_of(graph: CompiledStateGraph[Any, Any, Any, Any], *, sync: bool) -> Plan | None:
    """The plan of ``graph`` (worked out once per compiled graph), or None when its shape is not a
    chain of single next nodes (several edges out of a node, waiting edges...): Pregel runs that."""
    try:
        return _PLANS[graph]
    except KeyError:
        pass
    plan = _read(graph, sync)
    _PLANS[graph] = plan
    return plan


def _read(graph: CompiledStateGraph[Any, Any, Any, Any], sync: bool) -> Plan | None:
    builder = graph.builder
    if getattr(builder, "waiting_edges", None):
        return None
    nodes: dict[str, Callable[..., Any]] = {}
    for name, spec in builder.nodes.items():
        runnable = spec.runnable
        fn = getattr(runnable, "func" if sync else "afunc", None) or getattr(runnable, "func", None)
        special = ("defer", "retry_policy", "cache_policy", "timeout", "is_error_handler", "error_handler_node")
        if fn is None or any(getattr(spec, attr, None) for attr in special):
            return None
        accepts = set(getattr(runnable, "func_accepts", {}))
        if accepts - {"runtime"}:  # a node that asks for its config, writer or store: Pregel's to give
            return None
        nodes[name] = fn if accepts else _state_only(fn)
    edges: dict[str, str] = {}
    for source, target in builder.edges:
        if source in edges:
            return None
        edges[source] = target
    branches: dict[str, tuple[Callable[..., Any], Mapping[Any, str] | None]] = {}
    for source, specs in builder.branches.items():
        if len(specs) != 1 or source in edges or source == START:
            return None
        (branch,) = specs.values()
        route = getattr(branch.path, "func", None)
        if route is None:
            return None
        branches[source] = (route, branch.ends if isinstance(branch.ends, Mapping) else None)
    first = edges.get(START)
    if first is None or any(name not in edges and name not in branches for name in nodes):
        return None
    return Plan(nodes, first, edges, branches)


def _state_only(fn: Callable[..., Any]) -> Callable[..., Any]:
    """A node that takes the state only, called as the run calls every node (``(state, runtime)``)."""
    if inspect.iscoroutinefunction(fn):
        async def called_async(state: SessionState, runtime: Any) -> Any:
            return await fn(state)

        return called_async
    return lambda state, runtime: fn(state)


def select(graph: CompiledStateGraph[Any, Any, Any, Any], handlers: Plugged, *, sync: bool) -> Plan | None:
    """The plan of a run that may go without Pregel (the module docstring's rule), else None."""
    if _forced_pregel():
        return None
    plan = plan_of(graph, sync=sync)
    if plan is None or not _plain(plan.nodes, handlers) or not unobserved():
        return None
    return plan


def _forced_pregel() -> bool:
    """Whether ``SESSION_GRAPH_RESIZE_EXECUTOR`` forces Pregel (``pregel``, any case or spacing);
    unset, empty or ``auto``: the default choice; any other value is an error, never ignored."""
    value = os.environ.get(FORCE_PREGEL_ENV, "")
    choice = value.strip().lower()
    if choice not in ("", "auto", "pregel"):
        raise ConfigurationError(
            f"{FORCE_PREGEL_ENV}={value!r} names no resize executor: set it to 'pregel' to run every resize "
            "through LangGraph's Pregel loop, or unset it (or set 'auto') for the default choice."
        )
    return choice == "pregel"


def _plain(nodes: Mapping[str, Any], handlers: Plugged) -> bool:
    """No user code in any node of the graph (the model aside, which is invoked as a Runnable)."""
    if any(name in nodes for name in handlers.overrides) or any(name in nodes for name in handlers.resize):
        return False
    users = (("judge", handlers.policy), ("memo_update", handlers.memo_update), ("deep_chunk", handlers.memo_update),
             ("summary_fold", handlers.summary), ("attachment_summary", handlers.attachment_summary))
    if any(fn is not None and name in nodes for name, fn in users):
        return False
    return handlers.model is None or _plain_model(handlers.model, 6)


def _plain_model(runnable: Any, depth: int) -> bool:
    """Whether the session's model is a chat model without callbacks of its own, or bindings
    (``bind``, ``with_config``, ``with_retry``) and fallbacks around such. Anything else is a
    Runnable of the user's (a ``RunnableLambda``, a sequence...): its code may ask for a node's
    stream writer, config or store, and its steps may carry callbacks, so Pregel runs it."""
    if depth < 0:
        return False
    if isinstance(runnable, BaseLanguageModel):
        return not runnable.callbacks and runnable.verbose is not True
    if isinstance(runnable, RunnableBindingBase):  # a binding's callbacks: in its config, or made by a factory (with_listeners)
        return not runnable.config_factories and not (runnable.config or {}).get("callbacks") and _plain_model(runnable.bound, depth - 1)
    if isinstance(runnable, RunnableWithFallbacks):
        return all(_plain_model(r, depth - 1) for r in (runnable.runnable, *runnable.fallbacks))
    return False


def unobserved() -> bool:
    """No callback would see the run: what ``CallbackManager.configure`` makes of the enclosing
    run's callbacks (and tracing env, context, debug and hooks) has no handler."""
    ambient = var_child_runnable_config.get()
    callbacks = ambient.get("callbacks") if ambient else None
    if callbacks and (isinstance(callbacks, list) or callbacks.handlers or callbacks.inheritable_handlers):
        return False  # the enclosing run's handlers are the configured manager's: any of them observes
    # what configure adds to an empty manager (tracing env or context, debug, hooks): the same with
    # or without the enclosing run's empty one, whose tags and metadata it would only copy (an agent's: ~10 us)
    manager = CallbackManager.configure()
    return not manager.handlers and not manager.inheritable_handlers


def execute(plan: Plan, values: dict[str, Any], context: ResizeContext, recursion_limit: int,
            runtime: Runtime[ResizeContext] | None = None) -> Flow[None]:
    """Run ``plan`` on ``values`` (the run's input, updated in place as the channels would be);
    ``runtime``: the nodes' (``run._direct_runtime``: the enclosing run's store), else one holding ``context``."""
    runtime = Runtime(context=context) if runtime is None else runtime
    node, steps = plan.first, 0
    while node != END:
        name = node
        try:
            update = yield Call(plan.nodes[name], (SessionState(**values), runtime))
            if update is not None:
                if not isinstance(update, dict):
                    raise InvalidUpdateError(create_error_message(
                        message=f"Expected dict, got {update}", error_code=ErrorCode.INVALID_GRAPH_NODE_RETURN_VALUE))
                values.update((k, v) for k, v in update.items() if k in _FIELDS)
            branch = plan.branches.get(name)
            if branch is None:
                node = plan.edges[name]
            else:
                route, ends = branch
                chosen = route(SessionState(**values))
                node = chosen if ends is None else ends[chosen]
        except Exception as error:
            error.add_note(f"During task with name '{name}'")
            raise
        steps += 1
        if steps >= recursion_limit:
            raise GraphRecursionError(create_error_message(
                message=(f"Recursion limit of {recursion_limit} reached without hitting a stop condition. You can "
                         "increase the limit by setting the `recursion_limit` config key."),
                error_code=ErrorCode.GRAPH_RECURSION_LIMIT))
