"""The prune's cut found from the window's oldest end (``resize/prune_walk``) is ``plan_prune``'s.

Random windows (seeded: the same cases every run) of whole and broken turns, random sizes,
tokens and limits; wherever ``walk_prune`` answers, it answers what ``plan_prune`` does.
"""

from __future__ import annotations

import random

from session_graph.accounting.budget import plan_prune
from session_graph.resize.prune_walk import walk_prune


def _window(rng: random.Random) -> list[str]:
    roles: list[str] = []
    for _ in range(rng.randint(0, 12)):
        if rng.random() < 0.1:
            roles.append("system")
        roles.append("user")
        for _ in range(rng.randint(0, 3)):
            roles.append("assistant")
            roles += ["tool"] * rng.randint(1, 3)
        roles.append("assistant")
    return roles[rng.randint(0, 3):] if roles else roles  # sometimes opening inside a turn


def test_the_walk_from_the_oldest_end_cuts_where_plan_prune_does() -> None:
    rng = random.Random(25)
    answered = fallbacks = 0
    for _ in range(6000):
        roles = _window(rng)
        n = len(roles)
        sizes = [rng.choice((1, 5, 20, 80, 400)) for _ in roles]
        tokens = [max(1, s // rng.choice((1, 3, 4))) for s in sizes] if rng.random() < 0.7 else None
        full_chars = rng.choice((0, 100, 300, 1000))
        full_tokens = rng.choice((0, 60, 200, 600)) if tokens is not None else 0
        full_messages = rng.choice((0, 0, 6, 20))
        ratio = rng.choice((0.5, 0.8, 0.9, 1.0))
        limits = {"chars": int(full_chars * ratio), "messages": round(full_messages * ratio), "max_tokens": int(full_tokens * ratio)}
        keep_turn = tokens is not None and rng.random() < 0.8
        expected = plan_prune(roles, sizes, tokens=tokens, keep_turn=keep_turn, full_chars=full_chars, full_tokens=full_tokens,
                              full_messages=full_messages, **limits)
        walked = walk_prune(n, roles.__getitem__, sizes.__getitem__, tokens.__getitem__ if tokens is not None else None,
                            sum(sizes), sum(tokens or ()), keep_turn=keep_turn, full_chars=full_chars, full_tokens=full_tokens,
                            **limits)
        if walked is None:
            fallbacks += 1
            continue
        answered += 1
        assert walked == expected, (roles, sizes, tokens, limits, keep_turn)
    assert answered > 2500 and fallbacks > 50  # both paths are exercised (2,958 and 3,042 with this seed)


def test_the_walk_measures_only_what_it_drops_and_one_turn() -> None:
    roles = ["user", "assistant", "tool", "assistant"] * 500
    sizes = [10] * len(roles)
    measured: list[int] = []

    def size(i: int) -> int:
        measured.append(i)
        return sizes[i]

    plan = walk_prune(len(roles), roles.__getitem__, size, None, sum(sizes), 0, chars=19_000, messages=0, max_tokens=0,
                      keep_turn=False, full_chars=20_000, full_tokens=0)
    assert plan is not None and plan.keep_from == 104 and plan.kept_count == len(roles) - 104
    assert len(measured) <= 104  # the 2,000-message window was not measured whole
