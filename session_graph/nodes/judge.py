"""judge: ask the policy (or the forced type) what resize, if any, this run does."""

from __future__ import annotations

from typing import Any

from langgraph.runtime import Runtime

from session_graph._aio import maybe_await
from session_graph.policy import decide, default_policy
from session_graph.state import ResizeContext, SessionState


async def judge(state: SessionState, runtime: Runtime[ResizeContext]) -> dict[str, Any]:
    """Record the decision for this run in ``state.decision``."""
    ctx = runtime.context
    decision = await maybe_await(
        decide(
            ctx.force,
            ctx.policy,
            lambda: (state.full_chat_history, state.current_chat_history, state.settings),
            lambda: default_policy(ctx.totals, state.turns, state.last_resize_turn, state.settings.resolved()),
        )
    )
    return {"decision": decision}
