"""lite_prune: cut the window to the limits, never past what the memo has not folded."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from langchain_core.messages import AIMessage, ToolMessage
from langgraph.runtime import Runtime

from session_graph.accounting.budget import PrunePlan, plan_prune, window_room
from session_graph.accounting.window import BOUNDARY_ROLES
from session_graph.compression.backoff import prune_unpinned
from session_graph.messages import _TYPE_ROLES, role_of
from session_graph.resize.ledger import system_prompt
from session_graph.resize.prune_walk import walk_prune
from session_graph.resize.state import ResizeContext, SessionState


def call_ids(window: list[Any], skip: int) -> tuple[Any, Any]:
    """The call ids message ``i`` makes and the one it answers (``pairs.keep_calls``' readers)."""
    def calls(i: int) -> Sequence[str]:
        message = window[i + skip]
        if not isinstance(message, AIMessage) or not message.tool_calls:
            return ()  # most messages: no attribute lookup past the type (a missing one is slow on pydantic)
        return [c["id"] for c in message.tool_calls if c.get("id")]

    def answer(i: int) -> str | None:
        message = window[i + skip]
        return message.tool_call_id if isinstance(message, ToolMessage) else None

    return calls, answer


def prune_plan(state: SessionState, ctx: ResizeContext, *, pinned: bool = True) -> PrunePlan:
    """The cut for this state: char, message and token limits, pinned at the memo cursor.

    Under a token budget the room is the budget less what every request spends outside the
    window (system prompt, the summary or memo as this state holds it, reply priming); the
    headroom cut aims at ``prune_tokens`` instead of the whole budget (see ``budget.plan_prune``).
    """
    limits = state.settings.resolved()
    window = state.current_chat_history
    # Under a token budget the system prompt travels in the view, outside the window.
    system = system_prompt(state) if limits.tokens else None
    skip = 1 if system is not None and window and window[0] is system else 0
    system_tokens = ctx.tokens(system) if skip and system is not None else 0
    fixed = ctx.outside(state) + system_tokens if limits.tokens else 0
    full_room = window_room(limits.tokens, fixed)
    head_room = min(full_room, window_room(limits.prune_tokens, fixed))
    totals = ctx.totals  # the window's running totals: O(1) when nothing needs cutting
    opens = len(window) <= skip or role_of(window[skip]) in BOUNDARY_ROLES  # already opens on a turn
    if (opens and totals.count == len(window)
            and (not limits.prune_chars or totals.chars < limits.prune_chars)
            and (not limits.messages or totals.count <= limits.prune_messages)
            and (not full_room or totals.tokens - system_tokens <= head_room)):
        return PrunePlan(0, totals.chars, totals.count)
    if not (limits.memo_enabled or limits.summary_enabled) and totals.count == len(window):
        # lite mode: nothing ran before this node, so the running totals are this window's; walk
        # from its oldest end, measuring only what the cut drops (resize/prune_walk.py)
        walked = _walk(window, skip, totals, system_tokens, ctx, limits, head_room, full_room)
        if walked is not None:
            return walked
    window = window[skip:]
    pinned_from = None
    if pinned and (limits.memo_enabled or limits.summary_enabled) and not prune_unpinned(state.fold_records):
        for position, message in enumerate(window):
            index = ctx.index_of(message)
            if index is not None and index >= state.memo_cursor:
                pinned_from = position
                break
        else:
            pinned_from = len(window) if window else None
    calls, answer = call_ids(window, 0)
    plan = plan_prune(
        [role_of(m) for m in window],
        [ctx.size(m) for m in window],
        chars=limits.prune_chars,
        messages=limits.prune_messages,
        pinned_from=pinned_from,
        tokens=[ctx.tokens(m) for m in window] if full_room else None,
        max_tokens=head_room,
        keep_turn=bool(full_room),
        full_chars=limits.chars,
        full_tokens=full_room,
        full_messages=limits.messages,
        calls=calls,
        answer=answer,
    )
    return PrunePlan(plan.keep_from + skip, plan.kept_chars, plan.kept_count, plan.pinned)


def _walk(window: list[Any], skip: int, totals: Any, system_tokens: int, ctx: ResizeContext, limits: Any,
          head_room: int, full_room: int) -> PrunePlan | None:
    """``prune_plan``'s cut by ``walk_prune`` (None: it needs the whole window). The walk reads each
    message it passes several times: its accessors look it up in one step (``role_of``'s table first)."""
    roles, size_of, tokens_of = _TYPE_ROLES.get, ctx.size, ctx.tokens

    def role(i: int) -> str:
        message = window[i + skip]
        return roles(type(message)) or role_of(message)

    def size(i: int) -> int:
        return size_of(window[i + skip])

    def tokens(i: int) -> int:
        return tokens_of(window[i + skip])

    system_chars = ctx.size(window[0]) if skip else 0
    calls, answer = call_ids(window, skip)
    plan = walk_prune(
        len(window) - skip, role, size, tokens if full_room else None,
        totals.chars - system_chars, totals.tokens - system_tokens if full_room else 0,
        chars=limits.prune_chars, messages=limits.prune_messages, max_tokens=head_room, keep_turn=bool(full_room),
        full_chars=limits.chars, full_tokens=full_room, calls=calls, answer=answer,
    )
    return None if plan is None else PrunePlan(plan.keep_from + skip, plan.kept_chars, plan.kept_count, plan.pinned)


def lite_prune(state: SessionState, runtime: Runtime[ResizeContext]) -> dict[str, Any]:
    """Keep the newest whole units under every limit (see ``budget.plan_prune``).

    The char and message limits used are ``Limits.prune_chars`` and ``Limits.prune_messages``
    (each limit times ``prune_to_ratio``), the token one ``Limits.prune_tokens``: the low-water
    marks, so the turns after a prune fit without another resize.
    """
    plan = prune_plan(state, runtime.context)
    return {"current_chat_history": state.current_chat_history[plan.keep_from :]}
