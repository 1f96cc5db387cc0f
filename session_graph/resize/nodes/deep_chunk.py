"""deep_chunk: plan the memo folds of what the memo does not cover yet, in bounded chunks."""

from __future__ import annotations

from typing import Any

from langchain_core.messages import BaseMessage
from langgraph.runtime import Runtime

from session_graph.accounting.budget import plan_chunks
from session_graph.messages import role_of
from session_graph.resize.nodes.lite_prune import prune_plan
from session_graph.resize.state import ResizeContext, SessionState


def chunk_plan(messages: list[BaseMessage], state: SessionState, ctx: ResizeContext) -> list[tuple[int, int]]:
    """[start, end) chunks of ``messages`` for one fold call each: under ``session.memo.chunk_tokens``
    tokens under a token budget, else under the char limit (and four chars a chunk token)."""
    limits = state.settings.resolved()
    roles = [role_of(m) for m in messages]
    if limits.tokens:
        return plan_chunks(roles, [ctx.tokens(m) for m in messages], limits.chunk_tokens)
    cap = min(size for size in (limits.chars, limits.chunk_tokens * 4) if size)
    return plan_chunks(roles, [ctx.size(m) for m in messages], cap)


def fold_range(state: SessionState, ctx: ResizeContext, enabled: bool) -> tuple[int, int] | None:
    """[cursor, end) of the full history to fold in this run, or None.

    Everything past the cursor, when the prune would drop messages not folded yet, when the
    resize was forced, or when what waits is at least ``session.memo.fold_min_ratio`` of the
    window's limit; otherwise nothing (no model call for a handful of messages). Folding all
    that waits, not only what leaves, makes each model call carry a window's worth of
    messages, and every message is still folded exactly once.
    """
    limits = state.settings.resolved()
    full, cursor = state.full_chat_history, state.memo_cursor
    pending = [m for m in full[cursor:] if m.id not in state.memo_ahead] if state.memo_ahead else full[cursor:]
    if not enabled or not pending:
        return None
    if not ctx.force:
        window = state.current_chat_history
        plan = prune_plan(state, ctx, pinned=False)
        cut = ctx.index_of(window[plan.keep_from]) if plan.keep_from < len(window) else len(full)
        if cut is not None and cut <= cursor:  # nothing unfolded would leave the window
            if limits.tokens:
                waiting, limit = sum(ctx.tokens(m) for m in pending), limits.tokens
            else:
                waiting, limit = sum(ctx.size(m) for m in pending), limits.chars
            if waiting < limits.fold_min_ratio * limit:
                return None
    return cursor, len(full)


def unfolded(state: SessionState, start: int, end: int) -> list[BaseMessage]:
    """The messages of ``full[start:end]`` not folded yet (``memo_ahead`` left out)."""
    messages = state.full_chat_history[start:end]
    return [m for m in messages if m.id not in state.memo_ahead] if state.memo_ahead else messages


def advanced(state: SessionState, cursor: int) -> dict[str, Any]:
    """The cursor moved to ``cursor`` and past any message folded ahead, and what stays ahead."""
    if not state.memo_ahead:
        return {"memo_cursor": cursor}
    full = state.full_chat_history
    while cursor < len(full) and full[cursor].id in state.memo_ahead:
        cursor += 1
    later = {m.id for m in full[cursor:]}
    return {"memo_cursor": cursor, "memo_ahead": frozenset(i for i in state.memo_ahead if i in later)}


def memo_chunks(state: SessionState, ctx: ResizeContext) -> list[tuple[int, int]]:
    """Chunks of the full history the memo folds in this run (see ``fold_range``)."""
    span = fold_range(state, ctx, state.settings.resolved().memo_enabled)
    if span is None:
        return []
    start = span[0]
    return [(start + a, start + b) for a, b in chunk_plan(state.full_chat_history[start : span[1]], state, ctx)]


def deep_chunk(state: SessionState, runtime: Runtime[ResizeContext]) -> dict[str, Any]:
    """Plan this run's memo chunks (see ``memo_chunks``)."""
    return {"chunks": memo_chunks(state, runtime.context)}
