"""attachment_summary: summarise the attachments of the messages the memo will fold."""

from __future__ import annotations

from typing import Any

from langgraph.runtime import Runtime

from session_graph._base.flow import Flow, call
from session_graph.errors import HandlerResultError
from session_graph.messages import content_parts
from session_graph.resize.state import ResizeContext, SessionState


def attachment_summary(state: SessionState, runtime: Runtime[ResizeContext]) -> Flow[dict[str, Any]]:
    """Summaries by message id for every message past the memo cursor with non-text parts."""
    if not state.settings.resolved().memo_enabled:
        return {}
    summaries: dict[str, list[dict[str, Any]]] = {}
    for message in state.full_chat_history[state.memo_cursor :]:
        if any(isinstance(part, dict) and part.get("type") != "text" for part in content_parts(message)):
            summaries[message.id or ""] = yield from summarize(runtime.context, message)
    return {"attachments": summaries}


def summarize(ctx: ResizeContext, message: Any) -> Flow[list[dict[str, Any]]]:
    """Run the attachment-summary handler on one message and check its result."""
    result = yield from call(ctx.attachment_summary, message)
    if not isinstance(result, list) or not all(isinstance(item, dict) for item in result):
        raise HandlerResultError(
            f"the attachment summary handler returned {result!r:.120} for message {message.id}; "
            "return a list of dicts like {'type': 'image_url', 'ref': 'https://...', 'meta': {}}."
        )
    return result
