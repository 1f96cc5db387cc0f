"""summary_fold: in summary mode, fold what is about to leave the window into the summary.

When the prune would drop messages the summary does not cover yet (see
``deep_chunk.fold_range``), it folds everything past the cursor, in token-bounded chunks, one
model call each, each fed the previous summary whole. A summary over its budget gets one
compression request; the model's whole summary is kept either way (the view shortens it by
structure, never a silent cut).
"""

from __future__ import annotations

from typing import Any

from langchain_core.messages import SystemMessage
from langgraph.runtime import Runtime

from session_graph._base.flow import Flow, call
from session_graph.compression.context import SUMMARY_HEADER
from session_graph.errors import MemoUpdateError
from session_graph.resize.ledger import system_prompt
from session_graph.resize.nodes.deep_chunk import advanced, chunk_plan, fold_range
from session_graph.resize.nodes.memo_update import compressed
from session_graph.resize.state import ResizeContext, SessionState


def summary_fold(state: SessionState, runtime: Runtime[ResizeContext]) -> Flow[dict[str, Any]]:
    """Fold what waits past the cursor; advance the cursor as chunks land.

    Only what is new since the last fold is sent. A failure is recorded, not raised, so
    ``lite_prune`` still runs and stops at the cursor: nothing leaves the window uncovered.
    """
    limits = state.settings.resolved()
    if not limits.summary_enabled or state.error is not None:
        return {}
    ctx = runtime.context
    span = fold_range(state, ctx, True)
    if span is None:
        return {}
    cut = span[1]
    system = system_prompt(state)  # the system prompt stays in the view; it is never folded
    ahead = state.memo_ahead
    indices = [i for i in range(state.memo_cursor, cut)
               if state.full_chat_history[i] is not system and state.full_chat_history[i].id not in ahead]
    if not indices:
        return advanced(state, cut)
    leaving = [state.full_chat_history[i] for i in indices]
    summary, cursor = state.memo.get("summary", ""), state.memo_cursor

    def measure(text: str) -> int:
        return ctx.measure_context(SystemMessage(content=SUMMARY_HEADER + text))

    for start, end in chunk_plan(leaving, state, ctx):
        try:
            if ctx.summarize is None:
                raise MemoUpdateError(
                    "summary mode needs a chat model or a summary handler: pass Session(model=...) or "
                    "session.set_summary_handler(fn), or switch to lite mode with session.use_lite()."
                )
            folded = yield from call(ctx.summarize, summary, leaving[start:end], state.settings)
            if not isinstance(folded, str) or not folded.strip():
                raise MemoUpdateError(f"the summary handler returned {folded!r:.80}; it must return the summary text.")
        except Exception as error:  # keep the window: nothing leaves that the summary does not cover
            failure = MemoUpdateError(
                f"summary fold failed on messages {cursor}..{cut - 1}: {error} "
                f"The window keeps every message from index {cursor} on; call resize() again to resume.",
                memo_cursor=cursor,
                pending=cut - cursor,
            )
            failure.__cause__ = error
            update: dict[str, Any] = {"error": failure}
            if cursor > state.memo_cursor:  # the chunks folded before the failure are kept
                update.update(memo={**state.memo, "summary": summary}, **advanced(state, cursor))
            return update
        summary = yield from compressed(folded, limits.reserve_tokens, measure, ctx.compress_summary, str)
        cursor = indices[end - 1] + 1
    return {"memo": {**state.memo, "summary": summary}, **advanced(state, cut)}
