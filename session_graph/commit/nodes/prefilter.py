"""prefilter: for each candidate, the stored memories it may duplicate (key, hash, BM25)."""

from __future__ import annotations

from typing import Any

from langgraph.runtime import Runtime

from session_graph.commit.journal import FAILED
from session_graph.commit.state import CommitContext, CommitState
from session_graph.memory.config import unavailable
from session_graph.memory.prefilter import prefilter as find_hits

__all__ = ["namespaces_of", "prefilter"]


def namespaces_of(candidates: list[dict[str, Any]], ctx: CommitContext) -> list[tuple[str, ...]]:
    """Each candidate's namespace (its category's owner: the user or the agent)."""
    return [ctx.memory.namespace(c["category"]) for c in candidates]


def prefilter(state: CommitState, runtime: Runtime[CommitContext]) -> dict[str, Any]:
    """Hits per candidate (not journaled: a decided plan is, and replays without them)."""
    if "plan" in state.journal:
        return {}
    ctx = runtime.context
    candidates = state.journal["candidates"]
    try:
        return {"hits": find_hits(ctx.memory.memory_store, candidates, namespaces_of(candidates, ctx), top_k=ctx.top_k,
                                  embeddings=ctx.memory.embeddings)}
    except Exception as error:  # the store (or its vector index) failed: partial, resumed by the next commit
        if unavailable(error) is not None:  # a lost connection: a clear, retryable error (commit/run.py)
            raise
        return {"errors": [*state.errors, f"prefilter: the memory store failed: {type(error).__name__}: {error}"],
                "route": FAILED}
