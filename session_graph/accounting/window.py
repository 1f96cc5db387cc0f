"""Window bookkeeping: tool-call units and the running totals of the window.

A *unit* is a message plus the tool results that follow it: an assistant tool call and its
results are never separated (parallel calls included), and no window or chunk starts with
a tool result when it can be avoided. The plans built on units (the window's room, the
prune cut, memo chunks, the view) live in ``budget.py``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

__all__ = ["BOUNDARY_ROLES", "RunningTotals", "Totals", "WindowTotals", "unit_starts"]

BOUNDARY_ROLES = frozenset({"user", "system"})
"""Roles a window may open on: a turn starts with them."""


class Totals(Protocol):
    """What the judge reads of window totals (``WindowTotals``, or the ledger's ``RunningTotals``)."""

    @property
    def chars(self) -> int: ...
    @property
    def count(self) -> int: ...
    @property
    def tail_count(self) -> int: ...
    @property
    def tokens(self) -> int: ...
    @property
    def turn_count(self) -> int: ...
    def prunable(self, chars: int, messages: int, tokens: int = 0) -> tuple[bool, bool, bool]: ...


def _prunable(self: Totals, chars: int, messages: int, tokens: int = 0) -> tuple[bool, bool, bool]:
    """Whether a prune could shrink the window for (chars, messages, tokens) limits.

    A window that is just its newest unit cannot shrink, so an oversized single message
    never makes the policy fire on every turn; under a token budget a prune keeps the
    current turn whole, so neither does a long turn (every limit then needs more than it).
    ``tokens`` is the budget left for the window (after the system prompt, the summary
    reserve and the reply priming).
    """
    kept = max(self.tail_count, self.turn_count) if tokens > 0 else self.tail_count
    more_than_kept = self.count > kept
    return (
        bool(chars) and self.chars >= chars and more_than_kept,
        bool(messages) and self.count > messages and more_than_kept,
        tokens > 0 and self.tokens > tokens and more_than_kept,
    )


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
        totals = _new(WindowTotals)  # once per append: the slots are set directly (a frozen __init__ costs 2x)
        _set_chars(totals, self.chars + size)
        _set_count(totals, self.count + 1)
        _set_tail(totals, self.tail_count + 1 if role == "tool" and self.count else 1)
        _set_tokens(totals, self.tokens + tokens)
        _set_turn(totals, 1 if role == "user" else self.turn_count + 1)
        return totals

    @classmethod
    def of(cls, roles: Sequence[str], sizes: Sequence[int], tokens: Sequence[int] | None = None) -> WindowTotals:
        """Totals of a whole window, O(len(window)); used after a resize."""
        totals = cls()
        for index, (role, size) in enumerate(zip(roles, sizes, strict=True)):
            totals = totals.add(role, size, tokens[index] if tokens is not None else 0)
        return totals

    prunable = _prunable


_new = object.__new__
_set_chars, _set_count, _set_tail, _set_tokens, _set_turn = (
    WindowTotals.__dict__[name].__set__ for name in ("chars", "count", "tail_count", "tokens", "turn_count"))


def unit_starts(roles: Sequence[str]) -> list[int]:
    """Indices where a unit starts: every message except a tool result that follows one."""
    return [i for i, role in enumerate(roles) if i == 0 or role != "tool"]


class RunningTotals:
    """The window's totals as the ledger keeps them while messages arrive: updated in place
    (one append makes no object), read as a frozen ``WindowTotals`` by ``snapshot``."""

    __slots__ = ("chars", "count", "tail_count", "tokens", "turn_count")

    def __init__(self, totals: WindowTotals | None = None) -> None:
        totals = totals or WindowTotals()
        self.chars, self.count, self.tail_count = totals.chars, totals.count, totals.tail_count
        self.tokens, self.turn_count = totals.tokens, totals.turn_count

    def add(self, role: str, size: int, tokens: int = 0) -> None:
        """One more message (a tool result joins the newest unit), as ``WindowTotals.add``."""
        self.tail_count = self.tail_count + 1 if role == "tool" and self.count else 1
        self.turn_count = 1 if role == "user" else self.turn_count + 1
        self.chars += size
        self.count += 1
        self.tokens += tokens

    def snapshot(self) -> WindowTotals:
        """The totals now, frozen."""
        totals = _new(WindowTotals)
        _set_chars(totals, self.chars)
        _set_count(totals, self.count)
        _set_tail(totals, self.tail_count)
        _set_tokens(totals, self.tokens)
        _set_turn(totals, self.turn_count)
        return totals

    prunable = _prunable
