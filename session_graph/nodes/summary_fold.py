"""summary_fold: in summary mode, fold what is about to leave the window into the summary."""

from __future__ import annotations

from typing import Any

from langchain_core.messages import SystemMessage
from langgraph.runtime import Runtime

from session_graph._aio import maybe_await
from session_graph.errors import MemoUpdateError
from session_graph.ledger import system_prompt
from session_graph.nodes.lite_prune import prune_plan
from session_graph.state import ResizeContext, SessionState
from session_graph.summary import SUMMARY_HEADER
from session_graph.tokens import message_tokens, truncate_to_tokens


async def summary_fold(state: SessionState, runtime: Runtime[ResizeContext]) -> dict[str, Any]:
    """Fold the messages between the cursor and the planned cut; advance the cursor to the cut.

    Only what is new since the last fold is sent. A failure is recorded, not raised, so
    ``lite_prune`` still runs and stops at the cursor: nothing leaves the window uncovered.
    """
    limits = state.settings.resolved()
    if not limits.summary_enabled or state.error is not None:
        return {}
    ctx = runtime.context
    window = state.current_chat_history
    plan = prune_plan(state, ctx, pinned=False)
    cut = ctx.index_of(window[plan.keep_from]) if plan.keep_from < len(window) else len(state.full_chat_history)
    if cut is None or cut <= state.memo_cursor:
        return {}
    system = system_prompt(state)  # the system prompt stays in the view; it is never folded
    leaving = [m for m in state.full_chat_history[state.memo_cursor : cut] if m is not system]
    if not leaving:
        return {"memo_cursor": cut}
    previous = state.memo.get("summary", "")
    try:
        if ctx.summarize is None:
            raise MemoUpdateError(
                "summary mode needs a chat model or a summary handler: pass Session(model=...) or "
                "session.set_summary_handler(fn), or switch to lite mode with session.use_lite()."
            )
        summary = await maybe_await(ctx.summarize(previous, list(leaving), state.settings))
        if not isinstance(summary, str) or not summary.strip():
            raise MemoUpdateError(f"the summary handler returned {summary!r:.80}; it must return the summary text.")
    except Exception as error:  # keep the window: nothing leaves that the summary does not cover
        failure = MemoUpdateError(
            f"summary fold failed on messages {state.memo_cursor}..{cut - 1}: {error} "
            f"The window keeps every message from index {state.memo_cursor} on; call resize() again to resume.",
            memo_cursor=state.memo_cursor,
            pending=cut - state.memo_cursor,
        )
        failure.__cause__ = error
        return {"error": failure}
    if ctx.counter is not None:  # cut to the reserve, by binary search on tokens
        summary = truncate_to_tokens(
            summary,
            limits.reserve_tokens,
            lambda text: message_tokens(SystemMessage(content=SUMMARY_HEADER + text), ctx.counter, ctx.rules),
        )
    return {"memo": {**state.memo, "summary": summary}, "memo_cursor": cut}
