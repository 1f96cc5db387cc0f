"""build_resize_graph: the only place the resize graph's edges live.

::

    START -> judge -- no resize ---------------------------------------------> END
                   -- lite: messages (50) / turns (10) -> memo_update -> summary_fold -> lite_prune -> END
                   -- deep: chars or tokens at limit (100) -> attachment_summary -> deep_chunk -> memo_update
                   -- <type> (handler) -> <type> -> END
    memo_update -- next chunk --> memo_update

A resize type with a user handler (``"lite"`` and ``"deep"`` included) routes to a node
named after the type that runs the handler instead of the default chain. Any built-in
node can be replaced by name through ``overrides``; the replacement has the same
signature, ``(state, runtime) -> partial update`` (or ``(state)``), and what it returns is
checked against the session's invariants (``resize/node_checks.py``). Nodes are written once, as flows
(``_base/flow.py``), and compiled into a sync graph (run with ``invoke`` from sync code) or an
async one; a graph compiled for a mode holds only the nodes that mode can visit, while the
drawing (``mode=None``) shows the whole policy. A run whose type was decided before it (a forced
type, or the default policy on the running totals, see ``session_run``) runs a graph compiled
for that type (``start``): START goes straight into the type's route, so a pruning run is one
node, not two; otherwise START -> judge. Every node is wrapped once by ``trace.traced``, so each
run's trace records the route and each visit's time, however the graph is invoked.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from functools import lru_cache
import inspect
from typing import Any, Literal

from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.runtime import Runtime

from session_graph._base.aio import maybe_await, resolve_sync
from session_graph._base.flow import sync_and_async
from session_graph.errors import ConfigurationError, UnknownResizeTypeError
from session_graph.resize.node_checks import check_node_signature, check_node_update
from session_graph.resize.nodes import attachment_summary, deep_chunk, judge, lite_prune, memo_update, summary_fold
from session_graph.resize.nodes.resize_handler import resize_handler_node
from session_graph.resize.state import ResizeContext, SessionState
from session_graph.resize.trace_recording import traced

__all__ = ["NODE_NAMES", "ROUTE_LABELS", "build_resize_graph"]

NODE_NAMES = ("judge", "attachment_summary", "deep_chunk", "memo_update", "summary_fold", "lite_prune")
_DEFAULT_NODES: dict[str, Callable[..., Any]] = {
    "judge": judge,
    "attachment_summary": attachment_summary,
    "deep_chunk": deep_chunk,
    "memo_update": memo_update,
    "summary_fold": summary_fold,
    "lite_prune": lite_prune,
}
NO_RESIZE = "no resize"
NEXT_CHUNK = "next chunk"
CHUNKS_DONE = "memo covers the chunks"
ROUTE_LABELS = {
    "deep": "deep: chars or tokens at limit (100)",
    "lite": "lite: messages (50) / turns (10)",
}


def build_resize_graph(
    *,
    resize_types: Iterable[str] = (),
    overrides: Mapping[str, Callable[..., Any]] | None = None,
    checkpointer: bool | None = False,
    mode: Literal["lite", "memo", "summary"] | None = None,
    sync: bool = False,
    start: str | None = None,
) -> CompiledStateGraph:
    """Build and compile the resize graph.

    Args:
        resize_types: resize types that have a user handler; each routes to a node of its name.
        overrides: built-in nodes to replace, by name (one of ``NODE_NAMES``); sync or async
            functions ``(state, runtime) -> update``.
        checkpointer: False (the default) never checkpoints, even inside an agent's graph
            (the state is the whole session), and keeps LangGraph from treating the graph as
            a subgraph; None compiles a copy that a parent graph draws nested (``xray``).
        mode: compile only the nodes a session in this mode can visit (``"lite"``: judge and
            prune; ``"memo"``: no summary fold; ``"summary"``: no memo nodes); None, the whole
            policy (what drawings show).
        sync: nodes for ``graph.invoke`` from sync code (no event loop, no worker thread);
            else for ``graph.ainvoke``.
        start: a resize type decided before the run (a forced type, or the default policy
            judged on the running totals): the graph runs from START straight into that
            type's route, without the judge node; None (the default): START -> judge.

    Returns:
        The compiled graph, invoked with a ``SessionState`` and a ``ResizeContext``.

    Raises:
        ConfigurationError: an override names no built-in node, or a type collides with one.
        UnknownResizeTypeError: ``start`` names a type with no route.
    """
    return _build(tuple(sorted(set(resize_types))), tuple(sorted((overrides or {}).items())), checkpointer, mode, sync, start)


def _as_node(node: Callable[..., Any], sync: bool) -> Callable[..., Any]:
    """A node function for a sync or an async graph, from a flow, a plain function or a user's async function."""
    if inspect.isgeneratorfunction(node):
        run, arun = sync_and_async(node)
        return run if sync else arun
    try:
        wants_runtime = "runtime" in inspect.signature(node).parameters
    except (TypeError, ValueError):
        wants_runtime = True

    def called(state: SessionState, runtime: Runtime[ResizeContext]) -> Any:
        return node(state, runtime) if wants_runtime else node(state)  # a replacement may take the state only

    if sync:
        def sync_node(state: SessionState, runtime: Runtime[ResizeContext]) -> Any:
            return resolve_sync(called(state, runtime))

        return node if not inspect.iscoroutinefunction(node) else sync_node

    async def async_node(state: SessionState, runtime: Runtime[ResizeContext]) -> Any:
        return await maybe_await(called(state, runtime))  # a sync node runs here, not in a worker thread

    return node if inspect.iscoroutinefunction(node) else async_node


def _checked(name: str, node: Callable[..., Any]) -> Callable[..., Any]:
    """``node`` (as ``_as_node`` made it) with its update checked by ``check_node_update``."""
    try:
        wants_runtime = "runtime" in inspect.signature(node).parameters
    except (TypeError, ValueError):
        wants_runtime = True

    if inspect.iscoroutinefunction(node):
        async def checked_async(state: SessionState, runtime: Runtime[ResizeContext]) -> Any:
            update = await (node(state, runtime) if wants_runtime else node(state))
            return check_node_update(name, state, update)

        return checked_async

    def checked(state: SessionState, runtime: Runtime[ResizeContext]) -> Any:
        return check_node_update(name, state, node(state, runtime) if wants_runtime else node(state))

    return checked


@lru_cache(maxsize=128)
def _build(
    resize_types: tuple[str, ...],
    overrides: tuple[tuple[str, Callable[..., Any]], ...],
    checkpointer: bool | None,
    mode: str | None,
    sync: bool,
    start: str | None,
) -> CompiledStateGraph:
    nodes = dict(_DEFAULT_NODES)
    for name, node in overrides:
        if name not in nodes:
            raise ConfigurationError(f"no node {name!r} to override; the resize graph has {', '.join(NODE_NAMES)}.")
        if not callable(node):
            raise ConfigurationError(f"the override for node {name!r} must be callable, got {type(node).__name__}.")
        check_node_signature(name, node)
        nodes[name] = node
    for resize_type in resize_types:
        if not isinstance(resize_type, str) or not resize_type or resize_type in nodes or resize_type in (START, END):
            raise ConfigurationError(
                f"resize type {resize_type!r} cannot name a graph node; pick a name other than {', '.join(NODE_NAMES)}."
            )
    memo, summary = mode in (None, "memo"), mode in (None, "summary")

    graph = StateGraph(SessionState, context_schema=ResizeContext)

    replaced = {name for name, _ in overrides}

    def add(name: str, node: Callable[..., Any]) -> None:
        made = _as_node(node, sync)
        if name in replaced:  # a user's node: its update is checked against the invariants (resize/node_checks.py)
            made = _checked(name, made)
        graph.add_node(name, traced(name, made))  # every visit timed into the run's trace

    if start is None:
        add("judge", nodes["judge"])
    routes: dict[str, str] = {NO_RESIZE: END}
    labels: dict[str, str] = {}
    for resize_type in resize_types:
        label = f"{resize_type}: user handler"
        routes[label], labels[resize_type] = resize_type, label
        add(resize_type, resize_handler_node(resize_type))
        graph.add_edge(resize_type, END)
    default_routes = not {"lite", "deep"} <= set(resize_types)
    after_memo = "summary_fold" if summary else "lite_prune"
    first = "memo_update" if memo else after_memo
    if "deep" not in resize_types:
        if memo:
            routes[ROUTE_LABELS["deep"]], labels["deep"] = "attachment_summary", ROUTE_LABELS["deep"]
            add("attachment_summary", nodes["attachment_summary"])
            add("deep_chunk", nodes["deep_chunk"])
            graph.add_edge("attachment_summary", "deep_chunk")
            graph.add_edge("deep_chunk", "memo_update")
        else:
            routes[ROUTE_LABELS["deep"]], labels["deep"] = first, ROUTE_LABELS["deep"]
    if "lite" not in resize_types:
        routes[ROUTE_LABELS["lite"]], labels["lite"] = first, ROUTE_LABELS["lite"]
    if default_routes:
        if memo:
            add("memo_update", nodes["memo_update"])
            graph.add_conditional_edges("memo_update", _route_chunks, {NEXT_CHUNK: "memo_update", CHUNKS_DONE: after_memo})
        if summary:
            add("summary_fold", nodes["summary_fold"])
            graph.add_edge("summary_fold", "lite_prune")
        add("lite_prune", nodes["lite_prune"])
        graph.add_edge("lite_prune", END)

    def route_decision(state: SessionState) -> str:
        if state.decision is None:
            return NO_RESIZE
        resize_type = state.decision["type"]
        if resize_type not in labels:
            raise UnknownResizeTypeError(_no_route(f"the policy decided resize type {resize_type!r}, which", resize_type, labels))
        return labels[resize_type]

    if start is None:  # the judge decides, and the conditional edges after it are the policy's routes
        graph.add_edge(START, "judge")
        graph.add_conditional_edges("judge", route_decision, routes)
    elif start not in labels:
        raise UnknownResizeTypeError(_no_route(f"the resize type {start!r} was decided, but", start, labels))
    else:  # decided before the run: straight to that type's route
        graph.add_edge(START, routes[labels[start]])
    return graph.compile(name="session_graph.resize", checkpointer=checkpointer)


def _no_route(what: str, resize_type: str, labels: Mapping[str, str]) -> str:
    """The error for a decided type with no route: the fix, or why a handler cannot be its route."""
    known = f"known types: {', '.join(sorted(labels))}"
    if resize_type in NODE_NAMES or resize_type in (START, END):  # set_resize_handlers refuses these names
        return f"{what} has no route: it names a node of the resize graph, not a resize type; {known}."
    return f"{what} has no route; {known}. Register one with session.set_resize_handlers({resize_type!r}, handler)."


def _route_chunks(state: SessionState) -> str:
    return NEXT_CHUNK if state.chunks and state.error is None else CHUNKS_DONE
