"""decide: CREATE, UPDATE, MERGE or SKIP for each candidate that has hits; a plan of concrete ops."""

from __future__ import annotations

from typing import Any

from langgraph.runtime import Runtime

from session_graph._base.flow import Flow, Invoke
from session_graph.commit.journal import FAILED, journaled
from session_graph.commit.nodes.prefilter import namespaces_of
from session_graph.commit.state import CommitContext, CommitState
from session_graph.memory.plan import create_plan, decide_entries, plan_from_decisions
from session_graph.memory.prompts import decide_prompt
from session_graph.memory.replies import parse_decisions

__all__ = ["decide"]


def decide(state: CommitState, runtime: Runtime[CommitContext]) -> Flow[dict[str, Any]]:
    """Candidates without hits are created at their deterministic keys; the others go to the
    model in one call. A decision that names an id it was not shown, or an op its category
    does not allow, fails the step as a whole (nothing from that reply is applied)."""
    journal, ctx = state.journal, runtime.context
    if "plan" in journal:
        return {}
    candidates = journal["candidates"]
    namespaces = [list(ns) for ns in namespaces_of(candidates, ctx)]
    hits = state.hits or [{} for _ in candidates]
    entries = decide_entries(candidates, hits)
    if not entries:
        return journaled(state, ctx, plan=create_plan(candidates, namespaces))
    if ctx.model is None:
        return {"errors": [*state.errors, "decide: candidates have similar memories and there is no model to decide"],
                "route": FAILED}
    try:
        reply = yield Invoke(ctx.model, decide_prompt(entries))
        plan = plan_from_decisions(candidates, namespaces, hits, parse_decisions(reply))
    except Exception as error:
        return {"errors": [*state.errors, f"decide: {type(error).__name__}: {error}"], "route": FAILED}
    return journaled(state, ctx, plan=plan)
