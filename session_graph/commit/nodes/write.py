"""write: apply the plan to the memory store, each op once (its reference is recorded on the items)."""

from __future__ import annotations

from typing import Any

from langgraph.runtime import Runtime

from session_graph.commit.journal import journaled
from session_graph.commit.state import CommitContext, CommitState
from session_graph.memory.apply import apply_op, owner_lock

__all__ = ["write"]


def write(state: CommitState, runtime: Runtime[CommitContext]) -> dict[str, Any]:
    """Apply the ops not applied yet, under the owner's lock; a replay finds each op's
    reference on the items it touched and changes nothing."""
    journal, ctx = state.journal, runtime.context
    if ctx.dry_run:
        return {}
    store = ctx.memory.memory_store
    applied = dict(journal.get("applied") or {})
    sources = [{"session": state.session.id, "archive": state.name}]
    for position, op in enumerate(journal.get("plan") or []):
        if str(position) in applied:
            continue
        namespace = tuple(op["namespace"])
        with owner_lock(store, (namespace[0], namespace[1])):
            result = apply_op(store, op, f"{state.session.id}/{state.name}#{position}", sources, ctx.now, ctx.profile)
        applied[str(position)] = {"result": result, "key": op["key"], "category": op["category"],
                                  "targets": list(op.get("targets") or [])}
    return journaled(state, ctx, applied=applied)
