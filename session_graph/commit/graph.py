"""The commit graph, built in one place: its steps, its routes, user overrides."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from functools import lru_cache
from typing import Any

from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph

from session_graph.commit.journal import FAILED
from session_graph.commit.nodes.archive import archive
from session_graph.commit.nodes.claim import NOTHING, claim
from session_graph.commit.nodes.decide import decide
from session_graph.commit.nodes.extract import NO_CANDIDATES, NO_MODEL, extract
from session_graph.commit.nodes.finalize import finalize
from session_graph.commit.nodes.link_usage import link_usage
from session_graph.commit.nodes.prefilter import prefilter
from session_graph.commit.nodes.summarize import summarize
from session_graph.commit.nodes.write import write
from session_graph.commit.state import CommitContext, CommitState
from session_graph.errors import ConfigurationError
from session_graph.resize.graph import _as_node
from session_graph.resize.trace_recording import traced

__all__ = ["COMMIT_NODES", "build_commit_graph"]

_DEFAULT: dict[str, Callable[..., Any]] = {
    "claim": claim, "archive": archive, "summarize": summarize, "extract": extract, "prefilter": prefilter,
    "decide": decide, "write": write, "link_usage": link_usage, "finalize": finalize,
}
COMMIT_NODES = tuple(_DEFAULT)
"""The commit steps, in order."""


def _after_claim(state: CommitState) -> str:
    return NOTHING if state.route == NOTHING else "archive"


def _after_archive(state: CommitState) -> str:
    return "archived only" if state.route == "archive only" else "summarize"


def _on_failure(next_step: str) -> Callable[[CommitState], str]:
    def route(state: CommitState) -> str:
        return FAILED if state.route == FAILED else next_step

    return route


def _after_extract(state: CommitState) -> str:
    if state.route in (FAILED, NO_MODEL, NO_CANDIDATES):
        return state.route  # type: ignore[return-value]
    return "prefilter"


def build_commit_graph(overrides: Mapping[str, Callable[..., Any]] | None = None, *, sync: bool = True) -> CompiledStateGraph:
    """The compiled commit graph (``sync``: for ``invoke`` from sync code; else ``ainvoke``).

    Args:
        overrides: steps to replace, by name (one of ``COMMIT_NODES``), ``(state, runtime) -> update``.
        sync: compile sync nodes (model calls through ``invoke``) or async ones.

    Raises:
        ConfigurationError: an override names no step.
    """
    return _build(tuple(sorted((overrides or {}).items())), sync)


@lru_cache(maxsize=32)
def _build(overrides: tuple[tuple[str, Callable[..., Any]], ...], sync: bool) -> CompiledStateGraph:
    nodes = dict(_DEFAULT)
    for name, node in overrides:
        if name not in nodes:
            raise ConfigurationError(f"no commit step {name!r}; the steps are {', '.join(COMMIT_NODES)}.")
        nodes[name] = node
    graph = StateGraph(CommitState, context_schema=CommitContext)
    for name, node in nodes.items():
        graph.add_node(name, traced(name, _as_node(node, sync)))
    graph.add_edge(START, "claim")
    graph.add_conditional_edges("claim", _after_claim, {NOTHING: END, "archive": "archive"})
    graph.add_conditional_edges("archive", _after_archive, {"archived only": END, "summarize": "summarize"})
    graph.add_conditional_edges("summarize", _on_failure("extract"), {FAILED: "finalize", "extract": "extract"})
    graph.add_conditional_edges("extract", _after_extract, {FAILED: "finalize", NO_MODEL: "link_usage",
                                                            NO_CANDIDATES: "link_usage", "prefilter": "prefilter"})
    graph.add_edge("prefilter", "decide")
    graph.add_conditional_edges("decide", _on_failure("write"), {FAILED: "finalize", "write": "write"})
    graph.add_edge("write", "link_usage")
    graph.add_edge("link_usage", "finalize")
    graph.add_edge("finalize", END)
    return graph.compile(checkpointer=False, name="commit")
