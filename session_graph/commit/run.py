"""Running the commit graph and reading its result."""

from __future__ import annotations

import logging
from typing import Any

from langgraph.graph.state import CompiledStateGraph

from session_graph.commit.nodes.claim import NOTHING
from session_graph.commit.state import CommitContext, CommitState
from session_graph.memory.config import unavailable
from session_graph.resize.state import SessionState

__all__ = ["CommitContext", "CommitState", "commit_result", "run_commit", "run_commit_async"]

log = logging.getLogger(__name__)


def _final(out: Any, start: CommitState) -> CommitState:
    if isinstance(out, CommitState):
        return out
    return CommitState(**{**start.__dict__, **dict(out)})


def run_commit(graph: CompiledStateGraph, session: SessionState, ctx: CommitContext) -> CommitState:
    """Run the graph from sync code; returns its final state.

    Raises:
        StoreUnavailableError: the memory store's database connection failed (retryable).
    """
    start = CommitState(session=session)
    try:
        return _final(graph.invoke(start, context=ctx), start)
    except Exception as error:
        clear = unavailable(error)
        if clear is None:
            raise
        raise clear from error


async def run_commit_async(graph: CompiledStateGraph, session: SessionState, ctx: CommitContext) -> CommitState:
    """Run the graph from async code; returns its final state (errors as :func:`run_commit`)."""
    start = CommitState(session=session)
    try:
        return _final(await graph.ainvoke(start, context=ctx), start)
    except Exception as error:
        clear = unavailable(error)
        if clear is None:
            raise
        raise clear from error


def commit_result(state: CommitState, ctx: CommitContext) -> dict[str, Any]:
    """What ``commit()`` returns (see ``Session.commit``)."""
    journal = state.journal
    if state.route == NOTHING:
        return {"status": "skipped", "archived": False, "archive": None, "memories_extracted": 0,
                "active_count_updated": 0, "memories": {"created": [], "updated": [], "merged": [], "skipped": 0},
                "errors": [], "plan": [], "tokens": {"calls": 0, "input": 0, "output": 0}, "warnings": []}
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
    log.info("commit of session %r: %s, archive %s, %d created, %d updated, %d merged, %d skipped, %d error(s)",
             state.session.id, status, state.name, len(memories["created"]), len(memories["updated"]),
             len(memories["merged"]), memories["skipped"], len(state.errors))
    return {
        "status": status,
        "archived": bool(journal.get("archived")),
        "archive": state.name,
        "memories_extracted": len(journal.get("candidates") or []),
        "active_count_updated": len(journal.get("linked") or []),
        "skills_used": len(journal.get("skills") or []),
        "memories": memories,
        "errors": list(state.errors),
        "plan": list(journal.get("plan") or []),
        "abstract": journal.get("abstract"),
        "summary": "fallback" if journal.get("fallback_summary") else ("model" if "overview" in journal else None),
        "tokens": {"calls": ctx.spent.get("calls", 0), "input": ctx.spent.get("input_tokens", 0),
                   "output": ctx.spent.get("output_tokens", 0)},
        "warnings": list(journal.get("warnings") or []),
    }
