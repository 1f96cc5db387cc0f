"""lite_prune: cut the window to the limits, never past what the memo has not folded."""

from __future__ import annotations

from typing import Any

from langgraph.runtime import Runtime

from session_graph.messages import role_of
from session_graph.state import ResizeContext, SessionState
from session_graph.window import plan_prune


def lite_prune(state: SessionState, runtime: Runtime[ResizeContext]) -> dict[str, Any]:
    """Keep the newest whole units under both limits (see ``window.plan_prune``).

    The char limit used is ``Limits.prune_chars`` (the limit times ``prune_to_ratio``).
    """
    ctx = runtime.context
    limits = state.settings.resolved()
    window = state.current_chat_history
    pinned_from = None
    if limits.memo_enabled:
        for position, message in enumerate(window):
            index = ctx.index_of(message)
            if index is not None and index >= state.memo_cursor:
                pinned_from = position
                break
    plan = plan_prune(
        [role_of(m) for m in window],
        [ctx.size(m) for m in window],
        chars=limits.prune_chars,
        messages=limits.messages,
        pinned_from=pinned_from,
    )
    return {"current_chat_history": window[plan.keep_from :]}
