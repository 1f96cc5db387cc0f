"""link_usage: count the memories the archived turns used (``used()`` and context parts, by
``memory://`` or OpenViking ``viking://`` URI, in this config's own namespaces only), and the
skills ``used(skill=...)`` named (uses, successes, failures)."""

from __future__ import annotations

from typing import Any

from langgraph.runtime import Runtime

from session_graph.commit.journal import journaled
from session_graph.commit.state import CommitContext, CommitState
from session_graph.memory.apply import index_fields, owner_lock
from session_graph.memory.categories import slug
from session_graph.memory.config import unavailable
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
        place = ctx.memory.place_of(uri)  # memory:// or viking:// URIs; another owner's: None, never touched
        if place is None:
            continue
        namespace, key = place
        if namespace != ctx.memory.namespace(namespace[3]):
            continue  # another owner's memory (a message or record from a loaded document): never touched
        try:
            with owner_lock(store, (namespace[0], namespace[1])):
                item = store.get(namespace, key)
                if item is None:
                    continue
                ref = f"{state.session.id}/{state.name}#use"  # unique across sessions: each has its own archive_001
                if not applied(item.value, ref):
                    value = record_op({**item.value, "active_count": int(item.value.get("active_count") or 0) + 1,
                                       "last_used_at": ctx.now}, ref)
                    store.put(namespace, key, value, index=index_fields(value))
        except Exception as error:  # the store failed: partial; the next commit counts again (once per archive)
            if unavailable(error) is not None:  # a lost connection: a clear, retryable error (commit/run.py)
                raise
            return {"errors": [*state.errors, f"link_usage: the memory store failed: {type(error).__name__}: {error}"]}
        linked.append(uri)
    try:
        skills = _count_skills(store, ctx, [r for r in journal["usage"] if r.get("type") == "skill"], state)
    except Exception as error:
        if unavailable(error) is not None:  # a lost connection: a clear, retryable error (commit/run.py)
            raise
        return {"errors": [*state.errors, f"link_usage: the memory store failed: {type(error).__name__}: {error}"]}
    return journaled(state, ctx, linked=linked, relations=uris, skills=skills)


def _count_skills(store: Any, ctx: CommitContext, records: list[dict[str, Any]], state: CommitState) -> list[str]:
    """``uses``, ``successes`` and ``failures`` of each skill ``used(skill=...)`` named, on an item
    at ``("agent", agent, "skills")`` / ``slug(uri)`` (the agent's label derived like its memories':
    a tenant's own); each record counted once (its id is kept)."""
    namespace = (*ctx.memory.namespace("cases")[:2], "skills")
    counted = []
    with owner_lock(store, (namespace[0], namespace[1])):
        for record in records:
            key = slug(record["uri"])
            item = store.get(namespace, key)
            value = dict(item.value) if item is not None else {"uri": record["uri"], "uses": 0, "successes": 0, "failures": 0}
            ref = f"{state.session.id}/{state.name}#skill:{record.get('id')}"
            if not applied(value, ref):
                ok = record.get("success") is not False
                value = record_op({**value, "uses": int(value.get("uses", 0)) + 1,
                                   "successes": int(value.get("successes", 0)) + int(ok),
                                   "failures": int(value.get("failures", 0)) + int(not ok), "last_used_at": ctx.now,
                                   "last_input": record.get("input"), "last_output": record.get("output")}, ref)
                store.put(namespace, key, value, index=False)
            counted.append(record["uri"])
    return counted
