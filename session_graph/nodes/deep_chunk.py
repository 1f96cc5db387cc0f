"""deep_chunk: plan the memo folds of what the memo does not cover yet, under the limit."""

from __future__ import annotations

from typing import Any

from langgraph.runtime import Runtime

from session_graph.messages import role_of
from session_graph.state import ResizeContext, SessionState
from session_graph.window import plan_chunks


def deep_chunk(state: SessionState, runtime: Runtime[ResizeContext]) -> dict[str, Any]:
    """Chunks of the full history past the memo cursor, each under the char limit."""
    limits = state.settings.resolved()
    if not limits.memo_enabled:
        return {"chunks": []}
    pending = state.full_chat_history[state.memo_cursor :]
    size = runtime.context.size
    chunks = plan_chunks([role_of(m) for m in pending], [size(m) for m in pending], limits.chars)
    offset = state.memo_cursor
    return {"chunks": [(offset + start, offset + end) for start, end in chunks]}
