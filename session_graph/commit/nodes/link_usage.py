"""link_usage: count the memories the archived turns used (``used()`` and context parts)."""

from __future__ import annotations

from typing import Any

from langgraph.runtime import Runtime

from session_graph.commit.journal import journaled
from session_graph.commit.state import CommitContext, CommitState
from session_graph.memory.apply import owner_lock
from session_graph.memory.categories import parse_uri
from session_graph.memory.items import applied, record_op
from session_graph.memory.usage import derived_usage

__all__ = ["link_usage"]


def link_usage(state: CommitState, runtime: Runtime[CommitContext]) -> dict[str, Any]:
    """``active_count`` + 1 and ``last_used_at`` on each used memory item, once per archive."""
    journal, ctx = state.journal, runtime.context
    if "linked" in journal:
        return {}
    messages = state.session.full_chat_history[journal["start"] : journal["end"]]
    uris = list(dict.fromkeys([*(r["uri"] for r in journal["usage"]), *(r["uri"] for r in derived_usage(messages))]))
    if ctx.dry_run:
        return {"journal": {**journal, "linked": [], "relations": uris}}
    store, linked = ctx.memory.memory_store, []
    for uri in uris:
        place = parse_uri(uri)
        if place is None:
            continue
        namespace, key = place
        with owner_lock(store, (namespace[0], namespace[1])):
            item = store.get(namespace, key)
            if item is None:
                continue
            ref = f"{state.session.id}/{state.name}#use"  # unique across sessions: each has its own archive_001
            if not applied(item.value, ref):
                value = record_op({**item.value, "active_count": int(item.value.get("active_count") or 0) + 1,
                                   "last_used_at": ctx.now}, ref)
                store.put(namespace, key, value)
            linked.append(uri)
    return journaled(state, ctx, linked=linked, relations=uris)
