"""memo_update: fold one chunk of not-yet-covered messages into the memo.

Lite runs fold everything past the memo cursor as one chunk; deep runs fold the chunks
``deep_chunk`` planned, one per visit (the graph loops back while chunks remain). A failure
never raises out of the graph: it is recorded in ``state.error`` so that ``lite_prune``
still runs (pruning stops at the cursor) and the session keeps the memo's progress.
"""

from __future__ import annotations

from typing import Any

from langgraph.runtime import Runtime

from session_graph._aio import maybe_await
from session_graph.errors import MemoUpdateError
from session_graph.nodes.attachment_summary import summarize
from session_graph.state import ResizeContext, SessionState


def memo_for_model(memo: dict[str, Any]) -> dict[str, Any]:
    """The memo as a model sees it: without the session's own ``last_resize`` record."""
    return {key: value for key, value in memo.items() if key != "last_resize"}


async def memo_update(state: SessionState, runtime: Runtime[ResizeContext]) -> dict[str, Any]:
    """Fold ``chunks[0]`` (or, on a lite run, everything past the cursor) into the memo."""
    ctx = runtime.context
    if not state.settings.resolved().memo_enabled:
        return {"chunks": []}
    total = len(state.full_chat_history)
    chunks = state.chunks if state.chunks is not None else [(state.memo_cursor, total)]
    chunks = [chunk for chunk in chunks if chunk[1] > chunk[0]]
    if not chunks:
        return {"chunks": []}
    start, end = chunks[0]
    messages = state.full_chat_history[start:end]
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
                attachments.extend(await summarize(ctx, message))
        memo = await maybe_await(
            ctx.memo_update(memo_for_model(state.memo), list(messages), attachments, state.settings)
        )
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
    if "last_resize" in state.memo:
        memo = {**memo, "last_resize": state.memo["last_resize"]}
    return {"memo": memo, "memo_cursor": end, "chunks": chunks[1:]}
