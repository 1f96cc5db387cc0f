"""Pure arithmetic of a window's budget: its room, the prune cut, memo chunks and the view.

The one place these are computed (the policy, the prune, the folds and the view all call
here). Nothing here touches a model, a graph or a session; the nodes glue these results to
one state update. Units come from ``window.unit_starts``: a tool call and its results are
never separated; a result stored late (after another run's turn) is paired with its call by
``tool_call_id`` (``pairs``) when the caller gives the ids (``calls``, ``answer``).

- ``window_room``: what the window may spend under a token budget, once the system prompt,
  the summary or memo message *as held* (not its whole reserve) and the reply priming are paid.
- ``plan_prune``: keep the newest whole units under the low-water mark (the headroom limits:
  ``prune_tokens``, ``prune_chars``), open on a turn, so the next resize is several turns away
  (hysteresis: the full limits trigger, the low-water mark is where a prune cuts to); only when
  opening on the next turn would keep less than ``KEEP_AT_LEAST`` of the low-water mark (the
  cut fell inside a long turn), keep instead what ``trim_messages(strategy="last",
  start_on="human")`` keeps under the full limits.
- ``plan_chunks``: whole units in chunks under a size (tokens under a token budget, else chars).
- ``plan_budget``: the view's reverse fill within the budget.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from session_graph.accounting.pairs import call_reach, keep_calls
from session_graph.accounting.window import BOUNDARY_ROLES, unit_starts

__all__ = ["BudgetPlan", "PrunePlan", "plan_budget", "plan_chunks", "plan_prune", "window_room"]

KEEP_AT_LEAST = 0.5
"""A prune that opens on a turn keeps at least this share of its low-water mark; when the
turn boundary after the cut would keep less (the cut fell inside a long turn), it keeps what
fits the full limits instead (and the next resize comes sooner)."""


def window_room(budget: int, fixed: int) -> int:
    """Tokens the window may use under ``budget`` after ``fixed`` (0: no token budget)."""
    return max(1, budget - fixed) if budget else 0


@dataclass(frozen=True, slots=True)
class PrunePlan:
    """Where the pruned window starts.

    Attributes:
        keep_from: index of the first kept message in the window.
        kept_chars: approximate characters kept.
        kept_count: messages kept.
        pinned: True if the memo cursor stopped the cut earlier than the limits asked.
    """

    keep_from: int
    kept_chars: int
    kept_count: int
    pinned: bool = False


def _fill(
    starts: list[int], n: int, sizes: Sequence[int], tokens: Sequence[int] | None, chars: int, messages: int, max_tokens: int
) -> int:
    """Start of the newest whole units under every limit (the newest unit is always kept)."""
    keep_from, kept_chars, kept_count, kept_tokens = n, 0, 0, 0
    for index in range(len(starts) - 1, -1, -1):
        start = starts[index]
        end = starts[index + 1] if index + 1 < len(starts) else n
        unit_chars = sum(sizes[start:end])
        unit_tokens = sum(tokens[start:end]) if tokens is not None else 0
        if keep_from < n and (
            (chars and kept_chars + unit_chars >= chars)
            or (messages and kept_count + end - start > messages)
            or (max_tokens and kept_tokens + unit_tokens > max_tokens)
        ):
            break
        keep_from, kept_chars, kept_count, kept_tokens = start, kept_chars + unit_chars, kept_count + end - start, kept_tokens + unit_tokens
    return keep_from


def _next_boundary(roles: Sequence[str], keep_from: int) -> int:
    """The first turn boundary at or after ``keep_from`` (``keep_from`` itself if there is none)."""
    n = len(roles)
    if keep_from < n and roles[keep_from] not in BOUNDARY_ROLES:
        boundary = next((i for i in range(keep_from + 1, n) if roles[i] in BOUNDARY_ROLES), None)
        if boundary is not None:
            return boundary
    return keep_from


def plan_prune(
    roles: Sequence[str],
    sizes: Sequence[int],
    *,
    chars: int,
    messages: int,
    pinned_from: int | None = None,
    tokens: Sequence[int] | None = None,
    max_tokens: int = 0,
    keep_turn: bool = False,
    full_chars: int = 0,
    full_tokens: int = 0,
    full_messages: int = 0,
    calls: Callable[[int], Sequence[str]] | None = None,
    answer: Callable[[int], str | None] | None = None,
) -> PrunePlan:
    """Keep the newest whole units that fit the limits, starting at a turn where it can.

    Args:
        roles: OpenAI role of each window message, oldest first.
        sizes: size of each window message.
        chars: the headroom char limit: the window stays under it (0: no limit).
        messages: the window keeps at most this many messages (0: no limit).
        pinned_from: first index the memo has not covered yet; nothing from there on is cut.
        tokens: tokens of each window message, when a token budget applies.
        max_tokens: the headroom token limit (0: no limit).
        keep_turn: never cut past the newest user message (the window under a token budget).
        full_chars: the full char limit the headroom is taken from (0: same as ``chars``).
        full_tokens: the full token room the headroom is taken from (0: same as ``max_tokens``).
        full_messages: the full message limit ``messages`` is taken from (0: same as ``messages``).
        calls, answer: the tool call ids message ``i`` makes and the one it answers; given, a
            result stored late (after another run's turn) is never kept without its call
            (``pairs.keep_calls`` moves the cut back to the call).

    The newest unit is always kept, even when it alone breaks a limit. The headroom cut is
    moved forward to the next turn (user or system message) so the window opens on a turn.
    The headroom limits are the low-water mark: a prune cuts down to them, so the turns after
    it fit without another resize. Only when opening on the next turn keeps less than
    ``KEEP_AT_LEAST`` of every low-water mark (tokens, chars, and the message limit: the one
    that bound the cut is among them; the cut fell inside a long turn, and the next
    turn would drop a whole tool turn that fits), what fits the full limits from a turn
    boundary (what ``trim_messages`` keeps) is kept instead, and the next resize comes sooner.
    The window never opens on a tool result.
    """
    n = len(roles)
    starts = unit_starts(roles)
    fill = _fill(starts, n, sizes, tokens, chars, messages, max_tokens)
    headroom = _next_boundary(roles, fill)
    while headroom < n - 1 and roles[headroom] == "tool":
        headroom += 1
    keep_from = headroom
    # each low-water mark with what it measures (the one that bound the cut is among them)
    marks = [(measure, mark) for measure, mark in ((tokens if max_tokens else None, max_tokens), (sizes, chars))
             if measure is not None and mark]
    # Opening on the next turn dropped most of every low-water mark (the cut fell inside a long
    # turn): keep instead what fits the full limits from a turn boundary (what trim_messages keeps).
    if (marks and (full_chars > chars or full_tokens > max_tokens)
            and all(sum(measure[headroom:]) < KEEP_AT_LEAST * mark for measure, mark in marks)
            and (not messages or n - headroom < KEEP_AT_LEAST * messages)):
        fits = _next_boundary(roles, _fill(starts, n, sizes, tokens, full_chars or chars, full_messages or messages,
                                                 full_tokens or max_tokens))
        if fits < headroom and roles[fits] in BOUNDARY_ROLES:
            keep_from = fits
    while keep_from < n - 1 and roles[keep_from] == "tool":
        keep_from += 1
    if keep_turn:
        newest_user = next((i for i in range(n - 1, -1, -1) if roles[i] == "user"), None)
        if newest_user is not None and newest_user < keep_from:
            keep_from = newest_user
    pinned = pinned_from is not None and pinned_from < keep_from
    if pinned:
        keep_from = pinned_from  # type: ignore[assignment]
        while keep_from > 0 and roles[keep_from] == "tool":  # keep the call with its results
            keep_from -= 1
    if calls is not None and answer is not None:
        keep_from = keep_calls(keep_from, n, calls, answer)
    kept = sizes[keep_from:]
    return PrunePlan(keep_from, sum(kept), len(kept), pinned)


def plan_chunks(
    roles: Sequence[str],
    sizes: Sequence[int],
    max_size: int,
    calls: Callable[[int], Sequence[str]] | None = None,
    answer: Callable[[int], str | None] | None = None,
) -> list[tuple[int, int]]:
    """Split messages into [start, end) chunks of whole units, each under ``max_size``.

    ``sizes`` are tokens or chars, in the unit of ``max_size``. A unit larger than
    ``max_size`` becomes a chunk of its own; ``max_size`` 0 gives one chunk. Offsets are
    relative to the sequences given. With ``calls`` and ``answer`` (as ``plan_prune``'s), a
    chunk never ends between a tool call and a result stored late (after another run's
    turn): the fold that folds the call folds its result (the chunk may pass ``max_size``).
    """
    n = len(roles)
    if n == 0:
        return []
    if not max_size:
        return [(0, n)]
    starts = unit_starts(roles)
    reach = call_reach(n, calls, answer) if calls is not None and answer is not None else {}
    chunks: list[tuple[int, int]] = []
    chunk_start, chunk_size, held, seen = 0, 0, -1, 0  # held: the last late result a call before here waits for
    for index, start in enumerate(starts):
        end = starts[index + 1] if index + 1 < len(starts) else n
        unit_size = sum(sizes[start:end])
        if reach:
            held = max([held, *(reach[i] for i in range(seen, start) if i in reach)])
            seen = start
        if start > chunk_start and chunk_size + unit_size >= max_size and held < start:
            chunks.append((chunk_start, start))
            chunk_start, chunk_size = start, 0
        chunk_size += unit_size
    chunks.append((chunk_start, n))
    return chunks


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


_USER = frozenset({"user"})


def plan_budget(roles: Sequence[str], tokens: Sequence[int], budget: int) -> BudgetPlan:
    """Plan the window of a view under ``budget`` tokens.

    Reverse fill: the newest whole units that fit, moved forward to open on a user turn where
    that keeps the newest user message. When the current turn alone is over budget, the view
    keeps the newest user message and the newest units after it that fit (the middle of that
    turn is left out, whole units only); a newest message that cannot fit even alone is
    truncated to fit exactly.
    """
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
        if roles[keep_from] not in _USER:
            boundary = next((i for i in range(keep_from + 1, n) if roles[i] in _USER), None)
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
