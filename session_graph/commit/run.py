"""Running the commit graph and reading its result."""

from __future__ import annotations

from typing import Any

from langgraph.graph.state import CompiledStateGraph

from session_graph.commit.nodes.claim import NOTHING
from session_graph.commit.state import CommitContext, CommitState
from session_graph.resize.state import SessionState

__all__ = ["CommitContext", "CommitState", "commit_result", "run_commit", "run_commit_async"]


def _final(out: Any, start: CommitState) -> CommitState:
    if isinstance(out, CommitState):
        return out
    return CommitState(**{**start.__dict__, **dict(out)})


def run_commit(graph: CompiledStateGraph, session: SessionState, ctx: CommitContext) -> CommitState:
    """Run the graph from sync code; returns its final state."""
    start = CommitState(session=session)
    return _final(graph.invoke(start, context=ctx), start)


async def run_commit_async(graph: CompiledStateGraph, session: SessionState, ctx: CommitContext) -> CommitState:
    """Run the graph from async code; returns its final state."""
    start = CommitState(session=session)
    return _final(await graph.ainvoke(start, context=ctx), start)


def commit_result(state: CommitState, ctx: CommitContext) -> dict[str, Any]:
    """What ``commit()`` returns (see ``Session.commit``)."""
    journal = state.journal
    if state.route == NOTHING:
        return {"status": "skipped", "archived": False, "archive": None, "memories_extracted": 0,
                "active_count_updated": 0, "memories": {"created": [], "updated": [], "merged": [], "skipped": 0},
                "errors": [], "plan": []}
    applied = journal.get("applied") or {}
    memories: dict[str, Any] = {"created": [], "updated": [], "merged": [], "skipped": 0}
    for entry in applied.values():
        result = entry["result"]
        if result == "created":
            memories["created"].append(entry["key"])
        elif result == "updated":
            memories["updated"].append(entry["key"])
        elif result == "merged":
            memories["merged"].append(entry["key"])
        elif result == "skipped":
            memories["skipped"] += 1
    if ctx.dry_run:
        status = "dry_run"
    elif state.errors:
        status = "partial"
    elif not ctx.wait:
        status = "archived"
    else:
        status = "committed"
    return {
        "status": status,
        "archived": bool(journal.get("archived")),
        "archive": state.name,
        "memories_extracted": len(journal.get("candidates") or []),
        "active_count_updated": len(journal.get("linked") or []),
        "memories": memories,
        "errors": list(state.errors),
        "plan": list(journal.get("plan") or []),
        "abstract": journal.get("abstract"),
    }
