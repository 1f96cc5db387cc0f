"""summary_fold: in summary mode, fold what is about to leave the window into the summary.

When the prune would drop messages the summary does not cover yet (see
``deep_chunk.fold_range``), it folds everything past the cursor, in token-bounded chunks, one
model call each (an oversize message in pieces, see ``compression/pieces.py``), each fed the previous
summary whole. A summary over its budget gets one compression request, and is shortened
without the model, visibly, when it will not compress (see ``compression/refused.py``).
A reply that ignores the chunk it was fed (the previous summary unchanged, or none of the
chunk's content) is asked for again once, then the fold fails on it: those messages stay in
the window and the trace records why (``compression/fold_check.py``).
"""

from __future__ import annotations

from typing import Any

from langchain_core.messages import SystemMessage
from langgraph.runtime import Runtime

from session_graph._base.flow import Flow, call
from session_graph.compression.context import summary_content
from session_graph.compression.fold_check import checked_summary_fold
from session_graph.compression.novelty import shown_terms
from session_graph.compression.pieces import completed
from session_graph.compression.refused import COMPRESSION_REFUSED, compressed, shorten_summary
from session_graph.errors import MemoUpdateError
from session_graph.resize.ledger import system_prompt
from session_graph.resize.nodes.deep_chunk import advanced, batches, chunk_plan, fold_range, staying
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
    cut = span.end
    system = system_prompt(state)  # the system prompt stays in the view; it is never folded
    ahead = state.memo_ahead
    indices = [i for i in range(state.memo_cursor, cut)
               if state.full_chat_history[i] is not system and state.full_chat_history[i].id not in ahead]
    if not indices:
        return advanced(state, cut)
    leaving = [state.full_chat_history[i] for i in indices]
    summary, cursor = state.memo.get("summary", ""), state.memo_cursor
    refused = int(state.fold_records.get(COMPRESSION_REFUSED, 0))

    def measure(text: str) -> int:
        return ctx.measure_context(SystemMessage(content=summary_content(text)))  # as the view shows it

    plan = chunk_plan(leaving, state, ctx, sum(i < span.needed for i in indices))
    if plan and plan[-1][1] < len(indices):  # a runt of a last chunk waits for the next fold
        cut = indices[plan[-1][1]]
    for start, end in plan:
        try:
            if ctx.summarize is None:
                raise MemoUpdateError(
                    "summary mode needs a chat model or a summary handler: pass Session(model=...) or "
                    "session.set_summary_handler(fn), or switch to lite mode with session.use_lite()."
                )
            folded, done = summary, start
            for batch in batches(leaving[start:end], state, ctx):  # an oversize message goes in pieces
                fold = checked_summary_fold if ctx.check_folds else call  # a user's handler is not second-guessed
                folded = yield from fold(ctx.summarize, folded, batch, state.settings)
                if not isinstance(folded, str) or not folded.strip():
                    raise MemoUpdateError(f"the summary handler returned {folded!r:.80}; it must return the summary text.")
                if completed(batch):  # the messages a batch completes are covered, even if a later batch fails
                    done += completed(batch)
                    summary, cursor = folded, indices[done - 1] + 1
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
        summary, refused = yield from compressed(folded, limits.reserve_tokens, measure, ctx.compress_summary, str,
                                                 lambda text: shorten_summary(text, limits.reserve_tokens, ctx.measure_context,
                                                                             shown_terms(staying(state, ctx, {**state.memo, "summary": text}))),
                                                 refused)
        cursor = indices[end - 1] + 1
    records = {key: value for key, value in state.fold_records.items() if key != COMPRESSION_REFUSED}
    return {"memo": {**state.memo, "summary": summary}, "fold_records": {**records, **({COMPRESSION_REFUSED: refused} if refused else {})},
            **advanced(state, cut)}
