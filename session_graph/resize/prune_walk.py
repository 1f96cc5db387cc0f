"""The prune's cut found from the window's oldest end: O(what it drops + one turn), not O(window).

``accounting.budget.plan_prune`` measures every message of the window and fills whole units
from the newest end. When the window's running totals are known (the ledger keeps them), the
same cut is found from the oldest end instead: the suffix sums are the totals less what was
walked past, and they only shrink, so the first unit start whose suffix fits every low-water
mark is the cut ``plan_prune`` finds. Only the messages walked are measured. The rare cases
that need the whole window (the cut fell inside a long turn and ``plan_prune`` falls back to the
full limits, or there is no user message to keep the turn from) return None: the caller plans
with ``plan_prune``. ``tests/resize/test_prune_walk.py`` checks both agree on random windows.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from session_graph.accounting.budget import KEEP_AT_LEAST, PrunePlan
from session_graph.accounting.pairs import keep_calls
from session_graph.accounting.window import BOUNDARY_ROLES

__all__ = ["walk_prune"]


def walk_prune(
    n: int,
    role: Callable[[int], str],
    size: Callable[[int], int],
    tokens: Callable[[int], int] | None,
    total_chars: int,
    total_tokens: int,
    *,
    chars: int,
    messages: int,
    max_tokens: int,
    keep_turn: bool,
    full_chars: int,
    full_tokens: int,
    calls: Callable[[int], Sequence[str]] | None = None,
    answer: Callable[[int], str | None] | None = None,
) -> PrunePlan | None:
    """``plan_prune``'s plan (no pinned cursor) for ``n`` messages read by index, from their totals.

    Args:
        n: messages in the window (the system prompt left out).
        role, size, tokens: one message's role, size and tokens (tokens None: no token budget).
        total_chars, total_tokens: the sums of ``size`` and ``tokens`` over the ``n`` messages.
        chars, messages, max_tokens, keep_turn, full_chars, full_tokens, calls, answer: as ``plan_prune``'s.

    Returns:
        The plan, or None when only the whole window can tell it (plan with ``plan_prune``).
    """
    if n == 0:
        return None
    token_mark = max_tokens if tokens is not None else 0

    # the first unit start whose suffix fits; the newest unit is kept whatever it holds
    c, t, i, fill = total_chars, total_tokens, 0, None
    while i < n:
        if ((i == 0 or role(i) != "tool")  # a unit starts here and all from it fits every mark
                and (not chars or c < chars) and (not messages or n - i <= messages) and (not token_mark or t <= token_mark)):
            fill = i
            break
        c -= size(i)
        if tokens is not None:
            t -= tokens(i)
        i += 1
    if fill is None:  # the newest unit alone breaks a limit (rare): the whole plan decides
        return None
    # open on the next turn (a user or system message), never on a tool result
    head, hc, ht = fill, c, t
    if role(head) not in BOUNDARY_ROLES:
        j, jc, jt = head, hc, ht
        while j < n and role(j) not in BOUNDARY_ROLES:
            jc -= size(j)
            if tokens is not None:
                jt -= tokens(j)
            j += 1
        if j < n:
            head, hc, ht = j, jc, jt
    while head < n - 1 and role(head) == "tool":
        hc -= size(head)
        if tokens is not None:
            ht -= tokens(head)
        head += 1
    marks = [(measure, mark) for measure, mark in ((ht, token_mark), (hc, chars)) if mark]
    if (marks and (full_chars > chars or full_tokens > max_tokens)
            and all(measure < KEEP_AT_LEAST * mark for measure, mark in marks)
            and (not messages or n - head < KEEP_AT_LEAST * messages)):
        return None  # plan_prune may keep what fits the full limits instead: it needs the whole window
    keep, kc = head, hc
    if keep_turn:
        newest_user = n - 1
        while newest_user >= 0 and role(newest_user) != "user":
            newest_user -= 1
        if 0 <= newest_user < keep:
            kc += sum(size(k) for k in range(newest_user, keep))
            keep = newest_user
    if calls is not None and answer is not None:  # a late result keeps its call (reads the dropped prefix)
        back = keep_calls(keep, n, calls, answer)
        if back < keep:
            kc += sum(size(k) for k in range(back, keep))
            keep = back
    return PrunePlan(keep, kc, n - keep, False)
