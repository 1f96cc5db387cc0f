"""memo_update: fold one chunk of not-yet-covered messages into the memo.

Deep runs fold the chunks ``deep_chunk`` planned, one per visit (the graph loops back while
chunks remain); lite runs plan them here the same way (``deep_chunk.memo_chunks``), so a
lite resize folds only when a prune needs it or enough waits. A memo over its budget gets
one compression request; the model's whole memo is kept either way (the view shortens it).
A failure never raises out of the graph: it is recorded in ``state.error`` so that
``lite_prune`` still runs (pruning stops at the cursor) and the session keeps the memo's
progress.
"""

from __future__ import annotations

import logging
from typing import Any

from langchain_core.messages import SystemMessage
from langgraph.runtime import Runtime

from session_graph._base.flow import Flow, call
from session_graph.compression.context import MEMO_HEADER, memo_for_model, memo_json
from session_graph.errors import MemoUpdateError
from session_graph.resize.nodes.attachment_summary import summarize
from session_graph.resize.nodes.deep_chunk import advanced, memo_chunks, unfolded
from session_graph.resize.state import ResizeContext, SessionState

__all__ = ["memo_for_model", "memo_update"]

log = logging.getLogger("session_graph")


def compressed(value: Any, budget: int, measure: Any, compress: Any, valid: type) -> Flow[Any]:
    """``value``, or the model's compression of it when ``value`` measures over ``budget``.

    One request (``compress`` is a flow factory); a reply that fails, is of the wrong kind or
    is not shorter leaves ``value``.
    """
    tokens = measure(value)
    if tokens <= budget or compress is None:
        return value
    try:
        shorter = yield from compress(value, budget, tokens)
    except Exception as error:  # documented fallback: keep the whole reply, the view shortens it
        log.warning("compression request failed (%s); keeping the model's whole reply", error)
        return value
    if isinstance(shorter, valid) and shorter and measure(shorter) < tokens:
        return shorter
    log.warning("compression request returned nothing shorter; keeping the model's whole reply")
    return value


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
    try:
        if ctx.memo_update is None:
            raise MemoUpdateError(
                "memo mode needs a chat model or a memo update handler: pass Session(model=...) "
                "or session.set_memo_update_handler(fn), or switch to lite mode with session.use_lite()."
            )
        attachments: list[dict[str, Any]] = []
        known = state.attachments or {}
        for message in messages:
            if message.id in known:
                attachments.extend(known[message.id or ""])
            elif not isinstance(message.content, str):
                attachments.extend((yield from summarize(ctx, message)))
        memo = yield from call(ctx.memo_update, memo_for_model(state.memo), list(messages), attachments, state.settings)
        if not isinstance(memo, dict):
            raise MemoUpdateError(
                f"the memo update handler returned {type(memo).__name__} ({memo!r:.80}); it must return the "
                "updated memo as a dict."
            )
    except Exception as error:  # any failure: keep progress, stop pruning at the cursor
        pending = total - start
        failure = MemoUpdateError(
            f"memo update failed on messages {start}..{end - 1} of {total}: {error} "
            f"The memo keeps what it folded before; the window keeps every message from index {start} on; "
            "call resize() again to resume from there.",
            memo_cursor=start,
            pending=pending,
        )
        failure.__cause__ = error
        return {"error": failure, "chunks": []}
    memo = yield from compressed(
        memo,
        limits.reserve_tokens,
        lambda value: ctx.measure_context(SystemMessage(content=MEMO_HEADER + memo_json(value))),
        ctx.compress_memo,
        dict,
    )
    if "last_resize" in state.memo:
        memo = {**memo, "last_resize": state.memo["last_resize"]}
    return {"memo": memo, "chunks": chunks[1:], **advanced(state, end)}
