"""Pure arithmetic of a token budget: which window messages a view keeps, which one it cuts.

Reverse fill: the newest whole units (a tool call with all its results is one unit) that
fit the budget, moved forward to open on a user turn where that keeps the newest user
message. When the current turn alone is over budget, the view keeps the newest user
message and the newest units after it that fit (the middle of that turn is left out, whole
units only); a newest message that cannot fit even alone is truncated to fit exactly.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from session_graph.window import unit_starts

__all__ = ["BudgetPlan", "plan_budget"]

_BOUNDARY_ROLES = frozenset({"user"})


@dataclass(frozen=True, slots=True)
class BudgetPlan:
    """Which messages a view keeps, in order, and which one to cut.

    Attributes:
        keep: indices of the kept messages, ascending.
        truncate: index of the message to truncate, or None.
        truncate_to: the tokens that message may use after truncation.
        elided: how many messages of the current turn were left out to keep its user message.
    """

    keep: list[int] = field(default_factory=list)
    truncate: int | None = None
    truncate_to: int = 0
    elided: int = 0


def plan_budget(roles: Sequence[str], tokens: Sequence[int], budget: int) -> BudgetPlan:
    """Plan the window of a view under ``budget`` tokens (see the module docstring)."""
    n = len(roles)
    if n == 0:
        return BudgetPlan()
    budget = max(budget, 0)
    starts = unit_starts(roles)
    units = [(start, starts[k + 1] if k + 1 < len(starts) else n) for k, start in enumerate(starts)]
    newest_user = next((i for i in range(n - 1, -1, -1) if roles[i] == "user"), None)

    first, used = len(units), 0
    for k in range(len(units) - 1, -1, -1):
        cost = sum(tokens[units[k][0] : units[k][1]])
        if used + cost > budget:
            break
        first, used = k, used + cost
    if first < len(units):
        keep_from = units[first][0]
        if roles[keep_from] not in _BOUNDARY_ROLES:
            boundary = next((i for i in range(keep_from + 1, n) if roles[i] in _BOUNDARY_ROLES), None)
            if boundary is not None and (newest_user is None or boundary <= newest_user):
                keep_from = boundary
        if newest_user is None or newest_user >= keep_from:
            return BudgetPlan(list(range(keep_from, n)))

    # The current turn does not fit: keep its user message, then what fits of its end.
    head = [] if newest_user is None else [newest_user]
    tail_units = [u for u in units if newest_user is None or u[0] > newest_user]
    if head and tokens[newest_user] >= budget:  # type: ignore[index]
        return BudgetPlan(head, newest_user, budget, elided=n - 1 - newest_user)  # type: ignore[operator]
    left = budget - (tokens[newest_user] if head else 0)  # type: ignore[index]
    kept: list[int] = []
    for start, end in reversed(tail_units):
        cost = sum(tokens[start:end])
        if cost > left:
            break
        kept[:0] = range(start, end)
        left -= cost
    truncate, truncate_to = None, 0
    if not kept and tail_units:  # not even the newest unit fits: cut its newest message
        start, end = tail_units[-1]
        others = sum(tokens[start : end - 1])
        if others < left:
            kept = list(range(start, end))
            truncate, truncate_to = end - 1, left - others
        elif not head:
            kept, truncate, truncate_to = [n - 1], n - 1, budget
    keep = head + kept
    first_kept_after_user = kept[0] if kept else n
    elided = 0 if newest_user is None else first_kept_after_user - newest_user - 1
    return BudgetPlan(keep, truncate, truncate_to, elided)
