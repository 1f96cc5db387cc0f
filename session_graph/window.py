"""Pure window arithmetic: tool-call units, the prune cut, memo chunks, running totals.

Nothing here touches a model, a graph or a session; the nodes glue these results to one
state update. A *unit* is a message plus the tool results that follow it: an assistant
tool call and its results are never separated (parallel calls included), and no window
or chunk starts with a tool result when it can be avoided.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["PrunePlan", "WindowTotals", "plan_chunks", "plan_prune", "unit_starts"]

_BOUNDARY_ROLES = frozenset({"user", "system"})


@dataclass(frozen=True, slots=True)
class WindowTotals:
    """Running totals of the window, kept up to date per message in O(1).

    Attributes:
        chars: approximate characters of the whole window.
        count: messages in the window.
        tail_count: messages in the newest unit (which a prune always keeps).
        tokens: tokens of the whole window (0 when no token counter is in use).
        turn_count: messages since the newest user message (the current turn), which a
            prune under a token budget always keeps.
    """

    chars: int = 0
    count: int = 0
    tail_count: int = 0
    tokens: int = 0
    turn_count: int = 0

    def add(self, role: str, size: int, tokens: int = 0) -> WindowTotals:
        """The totals after one more message (a tool result joins the newest unit)."""
        turn = 1 if role == "user" else self.turn_count + 1
        tail = self.tail_count + 1 if role == "tool" and self.count else 1
        return WindowTotals(self.chars + size, self.count + 1, tail, self.tokens + tokens, turn)

    @classmethod
    def of(cls, roles: Sequence[str], sizes: Sequence[int], tokens: Sequence[int] | None = None) -> WindowTotals:
        """Totals of a whole window, O(len(window)); used after a resize."""
        totals = cls()
        for index, (role, size) in enumerate(zip(roles, sizes, strict=True)):
            totals = totals.add(role, size, tokens[index] if tokens is not None else 0)
        return totals

    def prunable(self, chars: int, messages: int, tokens: int = 0) -> tuple[bool, bool, bool]:
        """Whether a prune could shrink the window for (chars, messages, tokens) limits.

        A window that is just its newest unit cannot shrink, so an oversized single message
        never makes the policy fire on every turn. ``tokens`` is the budget left for the
        window (after the system prompt, the summary reserve and the reply priming).
        """
        more_than_tail = self.count > self.tail_count
        return (
            bool(chars) and self.chars >= chars and more_than_tail,
            bool(messages) and self.count > messages and more_than_tail,
            tokens > 0 and self.tokens > tokens and self.count > max(self.tail_count, self.turn_count),
        )


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


def unit_starts(roles: Sequence[str]) -> list[int]:
    """Indices where a unit starts: every message except a tool result that follows one."""
    return [i for i, role in enumerate(roles) if i == 0 or role != "tool"]


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
) -> PrunePlan:
    """Keep the newest whole units that fit both limits, starting at a turn where it can.

    Args:
        roles: OpenAI role of each window message, oldest first.
        sizes: size of each window message.
        chars: the window must stay under this many characters (0: no limit).
        messages: the window keeps at most this many messages (0: no limit).
        pinned_from: first index the memo has not covered yet; nothing from there on is cut.
        tokens: tokens of each window message, when a token budget applies.
        max_tokens: the window keeps at most this many tokens (0: no limit).
        keep_turn: never cut past the newest user message (the window under a token budget).

    The newest unit is always kept, even when it alone breaks a limit. The cut is then
    moved to the first user message inside the kept part when there is one, so the window
    opens on a turn boundary instead of mid-turn; and it never opens on a tool result.
    """
    n = len(roles)
    starts = unit_starts(roles)
    keep_from, kept_chars, kept_count, kept_tokens = n, 0, 0, 0
    for index in range(len(starts) - 1, -1, -1):
        start = starts[index]
        end = starts[index + 1] if index + 1 < len(starts) else n
        unit_chars = sum(sizes[start:end])
        unit_count = end - start
        unit_tokens = sum(tokens[start:end]) if tokens is not None else 0
        if keep_from < n and (
            (chars and kept_chars + unit_chars >= chars)
            or (messages and kept_count + unit_count > messages)
            or (max_tokens and kept_tokens + unit_tokens > max_tokens)
        ):
            break
        keep_from, kept_chars, kept_count = start, kept_chars + unit_chars, kept_count + unit_count
        kept_tokens += unit_tokens
    if keep_from < n and roles[keep_from] not in _BOUNDARY_ROLES:
        boundary = next((i for i in range(keep_from + 1, n) if roles[i] in _BOUNDARY_ROLES), None)
        if boundary is not None:
            keep_from = boundary
    while keep_from < n - 1 and roles[keep_from] == "tool":
        keep_from += 1
    if keep_turn:
        newest_user = next((i for i in range(n - 1, -1, -1) if roles[i] == "user"), None)
        if newest_user is not None and newest_user < keep_from:
            keep_from = newest_user
    pinned = pinned_from is not None and pinned_from < keep_from
    if pinned:
        keep_from = pinned_from
        while keep_from > 0 and roles[keep_from] == "tool":  # keep the call with its results
            keep_from -= 1
    kept = sizes[keep_from:]
    return PrunePlan(keep_from, sum(kept), len(kept), pinned)


def plan_chunks(roles: Sequence[str], sizes: Sequence[int], max_chars: int) -> list[tuple[int, int]]:
    """Split messages into [start, end) chunks of whole units, each under ``max_chars``.

    A unit larger than ``max_chars`` becomes a chunk of its own; ``max_chars`` 0 gives one
    chunk. Offsets are relative to the sequences given.
    """
    n = len(roles)
    if n == 0:
        return []
    if not max_chars:
        return [(0, n)]
    starts = unit_starts(roles)
    chunks: list[tuple[int, int]] = []
    chunk_start, chunk_chars = 0, 0
    for index, start in enumerate(starts):
        end = starts[index + 1] if index + 1 < len(starts) else n
        unit_chars = sum(sizes[start:end])
        if start > chunk_start and chunk_chars + unit_chars >= max_chars:
            chunks.append((chunk_start, start))
            chunk_start, chunk_chars = start, 0
        chunk_chars += unit_chars
    chunks.append((chunk_start, n))
    return chunks
