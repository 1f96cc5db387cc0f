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
signature, ``(state, runtime) -> partial update``. Every node is wrapped once by
``trace.traced``, so each run's trace records the route and each visit's time, however the
graph is invoked.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from functools import lru_cache
from typing import Any

from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph

from session_graph.errors import ConfigurationError, UnknownResizeTypeError
from session_graph.nodes import attachment_summary, deep_chunk, judge, lite_prune, memo_update, summary_fold
from session_graph.nodes.resize_handler import resize_handler_node
from session_graph.state import ResizeContext, SessionState
from session_graph.trace import traced

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
) -> CompiledStateGraph:
    """Build and compile the resize graph.

    Args:
        resize_types: resize types that have a user handler; each routes to a node of its name.
        overrides: built-in nodes to replace, by name (one of ``NODE_NAMES``).
        checkpointer: False (the default) never checkpoints, even inside an agent's graph
            (the state is the whole session), and keeps LangGraph from treating the graph as
            a subgraph; None compiles a copy that a parent graph draws nested (``xray``).

    Returns:
        The compiled graph, invoked with a ``SessionState`` and a ``ResizeContext``.

    Raises:
        ConfigurationError: an override names no built-in node, or a type collides with one.
    """
    return _build(tuple(sorted(set(resize_types))), tuple(sorted((overrides or {}).items())), checkpointer)


@lru_cache(maxsize=64)
def _build(
    resize_types: tuple[str, ...], overrides: tuple[tuple[str, Callable[..., Any]], ...], checkpointer: bool | None
) -> CompiledStateGraph:
    nodes = dict(_DEFAULT_NODES)
    for name, node in overrides:
        if name not in nodes:
            raise ConfigurationError(f"no node {name!r} to override; the resize graph has {', '.join(NODE_NAMES)}.")
        if not callable(node):
            raise ConfigurationError(f"the override for node {name!r} must be callable, got {type(node).__name__}.")
        nodes[name] = node
    for resize_type in resize_types:
        if not isinstance(resize_type, str) or not resize_type or resize_type in nodes or resize_type in (START, END):
            raise ConfigurationError(
                f"resize type {resize_type!r} cannot name a graph node; pick a name other than {', '.join(NODE_NAMES)}."
            )

    graph = StateGraph(SessionState, context_schema=ResizeContext)
    nodes = {name: traced(name, node) for name, node in nodes.items()}  # every visit timed into the run's trace
    graph.add_node("judge", nodes["judge"])
    routes: dict[str, str] = {NO_RESIZE: END}
    labels: dict[str, str] = {}
    for resize_type in resize_types:
        label = f"{resize_type}: user handler"
        routes[label], labels[resize_type] = resize_type, label
        graph.add_node(resize_type, traced(resize_type, resize_handler_node(resize_type)))
        graph.add_edge(resize_type, END)
    if "deep" not in resize_types:
        routes[ROUTE_LABELS["deep"]], labels["deep"] = "attachment_summary", ROUTE_LABELS["deep"]
        graph.add_node("attachment_summary", nodes["attachment_summary"])
        graph.add_node("deep_chunk", nodes["deep_chunk"])
        graph.add_edge("attachment_summary", "deep_chunk")
        graph.add_edge("deep_chunk", "memo_update")
    if "lite" not in resize_types:
        routes[ROUTE_LABELS["lite"]], labels["lite"] = "memo_update", ROUTE_LABELS["lite"]
    if not {"lite", "deep"} <= set(resize_types):
        graph.add_node("memo_update", nodes["memo_update"])
        graph.add_node("summary_fold", nodes["summary_fold"])
        graph.add_node("lite_prune", nodes["lite_prune"])
        graph.add_conditional_edges(
            "memo_update", _route_chunks, {NEXT_CHUNK: "memo_update", CHUNKS_DONE: "summary_fold"}
        )
        graph.add_edge("summary_fold", "lite_prune")
        graph.add_edge("lite_prune", END)

    def route_decision(state: SessionState) -> str:
        if state.decision is None:
            return NO_RESIZE
        resize_type = state.decision["type"]
        if resize_type not in labels:
            raise UnknownResizeTypeError(
                f"the policy decided resize type {resize_type!r}, which has no route; known types: "
                f"{', '.join(sorted(labels))}. Register one with session.set_resize_handlers({resize_type!r}, handler)."
            )
        return labels[resize_type]

    graph.add_edge(START, "judge")
    graph.add_conditional_edges("judge", route_decision, routes)
    return graph.compile(name="session_graph.resize", checkpointer=checkpointer)


def _route_chunks(state: SessionState) -> str:
    return NEXT_CHUNK if state.chunks and state.error is None else CHUNKS_DONE
