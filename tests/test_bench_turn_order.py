"""bench_turn's running order: in a batch-alternating A/B the agent that runs later in a round
pays what the earlier ones leave behind (caches, garbage, the allocator; same-vs-same ~5-10%
slower in second place), so the order turns each round: every agent runs first, last and in
every place equally often, and after each of its neighbours as often."""

from __future__ import annotations

from collections import Counter
import itertools

from bench_util import load_bench_turn
import pytest


@pytest.mark.parametrize("count", [2, 6, 7, 10])
def test_every_agent_runs_in_every_place_and_after_each_neighbour_equally_often(count: int) -> None:
    bench = load_bench_turn()
    names = [f"agent{i}" for i in range(count)]
    rounds = bench.balanced(2, count)
    assert rounds % (2 * count) == 0 and rounds >= 2  # raised to whole cycles of the order
    orders = [bench.order(names, r) for r in range(rounds)]
    assert all(sorted(o) == names for o in orders)  # every agent once a round
    for place in range(count):
        assert Counter(o[place] for o in orders) == dict.fromkeys(names, rounds // count)
    follows = Counter((a, b) for o in orders for a, b in itertools.pairwise(o))
    assert all(follows[(a, b)] == follows[(b, a)] for a, b in follows)  # A after B as often as B after A


def test_the_rounds_asked_for_are_raised_to_whole_cycles_never_lowered() -> None:
    bench = load_bench_turn()
    assert [bench.balanced(r, 6) for r in (1, 5, 12, 13)] == [12, 12, 12, 24]
