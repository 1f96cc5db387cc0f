"""A tool result kept with its call by ``tool_call_id``, wherever the result was stored.

Prune units are built by position (``window.unit_starts``: a result belongs to the message
before it). Two runs on one thread can store a result after another run's turn (a *late*
result): by position it rides with that run's reply, so a cut between the call and that reply
would keep the result and drop its call, an orphan the view drops, so the model never sees it.
``keep_calls`` moves a cut back so that every kept result's call is kept too (the pair is kept
together; the folds and the history hold both anyway). It reads only the dropped prefix for an
ordinary window (every call there answered there), so a prune's cost stays O(what it drops);
only a call left open in the prefix makes it look for that call's results in the kept part.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

__all__ = ["call_reach", "keep_calls"]


def keep_calls(keep_from: int, n: int, calls: Callable[[int], Sequence[str]], answer: Callable[[int], str | None]) -> int:
    """The cut at or before ``keep_from`` that keeps every kept tool result's call.

    Args:
        keep_from: the planned cut (the first kept message) among ``n`` messages.
        calls: the tool call ids a message makes (empty for all but assistant tool calls).
        answer: the ``tool_call_id`` a message answers (None for all but tool results).

    A result whose call is nowhere before the cut (no call anywhere) is left as it is.
    """
    while keep_from > 0:
        open_calls: dict[str, int] = {}
        for i in range(keep_from):
            answered = answer(i)
            if answered is not None:  # a result makes no call
                open_calls.pop(answered, None)
                continue
            for call in calls(i):
                open_calls.setdefault(call, i)
        if not open_calls:
            return keep_from
        back = min((open_calls[a] for i in range(keep_from, n) if (a := answer(i)) is not None and a in open_calls),
                   default=keep_from)
        if back >= keep_from:
            return keep_from
        keep_from = back  # the call's own message now opens the window; look again before it
    return keep_from


def call_reach(n: int, calls: Callable[[int], Sequence[str]], answer: Callable[[int], str | None]) -> dict[int, int]:
    """For each of ``n`` messages that makes a tool call answered later, the index of its last
    result: a cut in ``(call, result]`` would part them (a fold's chunks never cut there)."""
    made: dict[str, int] = {}
    reach: dict[int, int] = {}
    for i in range(n):
        answered = answer(i)
        if answered is not None and answered in made:
            reach[made[answered]] = i
        for call in calls(i):
            made.setdefault(call, i)
    return reach
