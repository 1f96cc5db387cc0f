"""memo_update: fold one chunk of not-yet-covered messages into the memo.

Deep runs fold the chunks ``deep_chunk`` planned, one per visit (the graph loops back while
chunks remain); lite runs plan them here the same way (``deep_chunk.memo_chunks``), so a
lite resize folds only when a prune needs it or enough waits. A chunk goes in batches under
the chunk size (an oversize message in pieces, see ``fold_pieces``). A memo over its budget
gets one compression request, and is shortened without the model when it will not compress
(see ``compression``).
A failure never raises out of the graph: it is recorded in ``state.error`` so that
``lite_prune`` still runs (pruning stops at the cursor) and the session keeps the memo's
progress.
"""

from __future__ import annotations

from typing import Any

from langchain_core.messages import SystemMessage
from langgraph.runtime import Runtime

from session_graph._base.exact_json import unstorable
from session_graph._base.flow import Flow, call
from session_graph.compression.context import MEMO_HEADER, memo_for_model, memo_json
from session_graph.compression.novelty import shown_terms
from session_graph.compression.pieces import completed
from session_graph.compression.refused import COMPRESSION_REFUSED, compressed, shorten_memo
from session_graph.errors import MemoUpdateError
from session_graph.resize.nodes.attachment_summary import summarize
from session_graph.resize.nodes.deep_chunk import advanced, batches, memo_chunks, staying, unfolded
from session_graph.resize.state import ResizeContext, SessionState

__all__ = ["memo_for_model", "memo_update"]



def memo_update(state: SessionState, runtime: Runtime[ResizeContext]) -> Flow[dict[str, Any]]:
    """Fold ``chunks[0]`` (on a lite run, the first chunk ``memo_chunks`` plans) into the memo."""
    ctx = runtime.context
    limits = state.settings.resolved()
    if not limits.memo_enabled:
        return {"chunks": []}
    total = len(state.full_chat_history)
    chunks = state.chunks if state.chunks is not None else memo_chunks(state, ctx)
    chunks = [chunk for chunk in chunks if chunk[1] > chunk[0]]
    if not chunks:
        return {"chunks": []}
    start, end = chunks[0]
    messages = unfolded(state, start, end)
    kept, done = state.memo, 0  # the memo after the last batch that completed a message, and how many it completed
    try:
        if ctx.memo_update is None:
            raise MemoUpdateError(
                "memo mode needs a chat model or a memo update handler: pass Session(model=...) "
                "or session.set_memo_update_handler(fn), or switch to lite mode with session.use_lite()."
            )
        known = state.attachments or {}
        memo = memo_for_model(state.memo)
        described: set[str | None] = set()
        for batch in batches(list(messages), state, ctx):  # an oversize message goes in pieces
            attachments: list[dict[str, Any]] = []
            for message in batch:
                if message.id in described:
                    continue  # a later piece: its attachments went with the first
                described.add(message.id)
                if message.id in known:
                    attachments.extend(known[message.id or ""])
                elif not isinstance(message.content, str):
                    attachments.extend((yield from summarize(ctx, message)))
            memo = yield from call(ctx.memo_update, memo, batch, attachments, state.settings)
            if not isinstance(memo, dict):
                raise MemoUpdateError(
                    f"the memo update handler returned {type(memo).__name__} ({memo!r:.80}); it must return the "
                    "updated memo as a dict."
                )
            why = unstorable(memo, "the updated memo")  # a model's NaN (json reads it), a handler's datetime
            if why is not None:
                raise MemoUpdateError(f"{why} (the memo update handler's or model's reply)")
            if completed(batch):
                kept, done = memo, done + completed(batch)
    except Exception as error:  # any failure: keep progress, stop pruning at the cursor
        ahead = state.memo_ahead
        positions = [i for i in range(start, end) if state.full_chat_history[i].id not in ahead] if ahead else range(start, end)
        cursor = positions[done - 1] + 1 if done else start
        failure = MemoUpdateError(
            f"memo update failed on messages {cursor}..{end - 1} of {total}: {error} "
            f"The memo keeps what it folded before; the window keeps every message from index {cursor} on; "
            "call resize() again to resume from there.",
            memo_cursor=cursor,
            pending=total - cursor,
        )
        failure.__cause__ = error
        if not done:
            return {"error": failure, "chunks": []}
        kept = {**kept, **{key: state.memo[key] for key in ("last_resize",) if key in state.memo}}
        return {"error": failure, "chunks": [], "memo": kept, **advanced(state, cursor)}
    memo, refused = yield from compressed(
        memo,
        limits.reserve_tokens,
        lambda value: ctx.measure_context(SystemMessage(content=MEMO_HEADER + memo_json(value))),
        ctx.compress_memo,
        dict,
        lambda value: shorten_memo(value, limits.reserve_tokens, ctx.measure_context, shown_terms(staying(state, ctx, value))),
        int(state.fold_records.get(COMPRESSION_REFUSED, 0)),
    )
    if "last_resize" in state.memo:
        memo = {**memo, "last_resize": state.memo["last_resize"]}
    records = {key: value for key, value in state.fold_records.items() if key != COMPRESSION_REFUSED}
    if refused:
        records[COMPRESSION_REFUSED] = refused
    return {"memo": memo, "fold_records": records, "chunks": chunks[1:], **advanced(state, end)}
