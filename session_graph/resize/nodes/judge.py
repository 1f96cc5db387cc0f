"""judge: ask the policy (or the forced type) what resize, if any, this run does."""

from __future__ import annotations

from typing import Any

from langgraph.runtime import Runtime

from session_graph._base.flow import Flow
from session_graph.resize.policy import PolicyHandler, decide, default_policy
from session_graph.resize.state import ResizeContext, SessionState
from session_graph.accounting.window import WindowTotals


def judge_state(
    force: Any, policy: PolicyHandler | None, state: SessionState, totals: WindowTotals, fixed_tokens: int = 0
) -> Flow[Any]:
    """The decision for a state, as a flow (a user's policy may be sync or async)."""
    return decide(
        force,
        policy,
        lambda: (state.full_chat_history, state.current_chat_history, state.settings),
        lambda: default_policy(totals, state.turns, state.last_resize_turn, state.settings.resolved(), fixed_tokens),
    )


def judge(state: SessionState, runtime: Runtime[ResizeContext]) -> Flow[dict[str, Any]]:
    """Record the decision for this run in ``state.decision``."""
    ctx = runtime.context
    return {"decision": (yield from judge_state(ctx.force, ctx.policy, state, ctx.totals, ctx.fixed_tokens))}
