"""deep_chunk: plan the memo folds of what the memo does not cover yet, in bounded chunks."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
import math
from typing import Any, NamedTuple

from langchain_core.messages import BaseMessage, SystemMessage
from langgraph.runtime import Runtime

from session_graph.accounting.budget import plan_chunks
from session_graph.accounting.sizing import message_chars
from session_graph.compression.backoff import fold_suspended
from session_graph.compression.pieces import fold_batches
from session_graph.compression.transcript import transcript_line
from session_graph.messages import role_of
from session_graph.resize.nodes.lite_prune import call_ids, prune_plan
from session_graph.resize.state import ResizeContext, SessionState
from session_graph.retrieval.tokenize import is_cjk


def script_tokens(message: BaseMessage) -> int:
    """A message's tokens estimated without a counter, by script: a CJK character is about a
    token, other text about four characters a token (its size in chars otherwise)."""
    text = message.text
    cjk = sum(1 for ch in text if ch >= "\u3040" and is_cjk(ch))
    return cjk + math.ceil((message_chars(message) - cjk) / 4)


def sent_line(message: BaseMessage) -> SystemMessage:
    """``message`` as a fold sends it: its quoted transcript line (``compression/transcript``),
    as a message, so that it is measured as the message is."""
    return SystemMessage(content=transcript_line(message, lean=True, quoted=True))


def chunk_size(state: SessionState, ctx: ResizeContext) -> tuple[Callable[[BaseMessage], int], int]:
    """How a fold's chunk is measured and the most it may hold: ``session.memo.chunk_tokens``
    tokens under a token budget; under a char limit, at most the limit in chars and about
    ``chunk_tokens`` tokens estimated by script (``script_tokens``): four chars a token held
    for Chinese text would send four times the tokens the setting allows.

    A message counts what the fold sends of it, its quoted line (``sent_line``: a quote or a line
    break in its text is two characters there), or its own size when that is more (a message's
    parts, its per-message overhead): a chunk sized to fit fits as sent."""
    limits = state.settings.resolved()
    if limits.tokens:
        return (lambda message: max(ctx.tokens(message), ctx.measure_context(sent_line(message)))), limits.chunk_tokens
    chars = min(size for size in (limits.chars, limits.chunk_tokens * 4) if size)
    tokens = limits.chunk_tokens

    def measure(message: BaseMessage) -> int:  # either bound, scaled to one unit: chars x tokens
        line = sent_line(message)
        return max(max(ctx.size(message), message_chars(line)) * tokens, max(script_tokens(message), script_tokens(line)) * chars)

    return measure, chars * tokens


def chunk_plan(
    messages: list[BaseMessage], state: SessionState, ctx: ResizeContext, needed: int | None = None
) -> list[tuple[int, int]]:
    """[start, end) chunks of whole units of ``messages`` under ``chunk_size``; a unit larger
    than that is a chunk of its own, which ``fold_batches`` sends in bounded pieces.

    ``needed``: how many of ``messages`` must be folded now (they are about to leave the
    window); None: all. A last chunk past them that carries less than half a chunk is left
    to the next fold: each model call re-sends the instructions and the previous summary or
    memo, so a runt of a call (895 tokens after a 3,008-token chunk, measured) costs them
    for little, and the messages it holds stay in the window meanwhile, unfolded, as any
    message past the cursor does.
    """
    measure, cap = chunk_size(state, ctx)
    sizes = [measure(m) for m in messages]
    chunks = plan_chunks([role_of(m) for m in messages], sizes, cap, *call_ids(messages, 0))
    if needed is not None and cap and len(chunks) > 1:
        start, end = chunks[-1]
        if start >= needed and 2 * sum(sizes[start:end]) < cap:
            chunks.pop()
    return chunks


def batches(messages: list[BaseMessage], state: SessionState, ctx: ResizeContext) -> list[list[BaseMessage]]:
    """One chunk's messages as model calls, each under ``chunk_size`` (see ``fold_pieces``)."""
    measure, cap = chunk_size(state, ctx)
    return fold_batches(messages, cap, measure)


class FoldSpan(NamedTuple):
    """What a run folds: ``[start, end)`` of the full history, of which ``[start, needed)`` must
    be folded now (it is about to leave the window); the rest is folded in whole chunks."""

    start: int
    end: int
    needed: int


def fold_range(state: SessionState, ctx: ResizeContext, enabled: bool) -> FoldSpan | None:
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
    if not enabled or not pending or fold_suspended(state.fold_records, state.turns, ctx.force):
        return None  # nothing to fold, or a failing model's back-off is running (see fold_backoff)
    needed = len(full)
    if not ctx.force:
        window = state.current_chat_history
        plan = prune_plan(state, ctx, pinned=False)
        cut = ctx.index_of(window[plan.keep_from]) if plan.keep_from < len(window) else len(full)
        if cut is not None:
            needed = max(cursor, cut)
        if cut is not None and cut <= cursor:  # nothing unfolded would leave the window
            if limits.tokens:
                waiting, limit = sum(ctx.tokens(m) for m in pending), limits.tokens
            else:
                waiting, limit = sum(ctx.size(m) for m in pending), limits.chars
            if waiting < limits.fold_min_ratio * limit:
                return None
    return FoldSpan(cursor, len(full), needed)


def unfolded(state: SessionState, start: int, end: int) -> list[BaseMessage]:
    """The messages of ``full[start:end]`` not folded yet (``memo_ahead`` left out)."""
    messages = state.full_chat_history[start:end]
    return [m for m in messages if m.id not in state.memo_ahead] if state.memo_ahead else messages


def staying(state: SessionState, ctx: ResizeContext, memo: dict[str, Any]) -> list[BaseMessage]:
    """The window's messages this resize's prune keeps once the summary or memo is ``memo``:
    what the window still shows after it.

    A fold's reply that must be shortened without the model drops first what the window shows
    (``compression/novelty.py``); the messages this resize evicts are still in the window while
    it folds, and their lines are then the only trace of them, so they do not count as shown.
    The prune is planned with the new ``memo`` (it holds up to its reserve), as ``lite_prune``
    will plan it after the fold."""
    window = state.current_chat_history
    return window[prune_plan(replace(state, memo=memo), ctx, pinned=False).keep_from :]


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
    start = span.start
    plan = chunk_plan(state.full_chat_history[start : span.end], state, ctx, span.needed - start)
    return [(start + a, start + b) for a, b in plan]


def deep_chunk(state: SessionState, runtime: Runtime[ResizeContext]) -> dict[str, Any]:
    """Plan this run's memo chunks (see ``memo_chunks``)."""
    return {"chunks": memo_chunks(state, runtime.context)}
