"""bench_speed section 1: the direct resize, the same resize through Pregel and the bare invoke are
timed in batches whose order turns (the later one in a batch pays what the earlier ones leave
behind), the lines that say "direct" time direct runs even when the environment forces Pregel,
and the section refuses to run when callbacks or tracing would send every resize through Pregel."""

from __future__ import annotations

from collections import Counter
import itertools
from typing import Any
from unittest.mock import MagicMock

from bench_util import load_bench
from langchain_core.tracers.context import tracing_v2_enabled
from langgraph.graph.state import CompiledStateGraph
import pytest

from session_graph.resize import run as run_module
from session_graph.resize.direct import FORCE_PREGEL_ENV


def load_bench_speed() -> Any:
    module = load_bench("bench_speed")
    made = module.conversation
    module.conversation = lambda n, *args, **kwargs: made(min(n, 3000), *args, **kwargs)  # section 1 makes 10**6 turns ahead
    return module


@pytest.mark.parametrize("n", [10, 200, 400])
def test_each_slot_runs_in_every_place_and_after_each_other_equally_often(n: int) -> None:
    orders = load_bench_speed().slot_orders(n)
    assert len(orders) >= n // 10 and all(sorted(o) == [0, 1, 2] for o in orders)
    for place in range(3):
        assert Counter(o[place] for o in orders) == dict.fromkeys(range(3), len(orders) // 3)
    follows = Counter(pair for o in orders for pair in itertools.pairwise(o))
    assert len(set(follows.values())) == 1 and len(follows) == 6


def test_the_direct_lines_time_direct_runs_even_when_pregel_is_forced(monkeypatch: pytest.MonkeyPatch, capsys: Any) -> None:
    monkeypatch.delenv(FORCE_PREGEL_ENV, raising=False)  # the suite may run with Pregel forced: the first run is the default's
    bench = load_bench_speed()
    counts = Counter[str]()
    real_execute, real_stream, real_astream = run_module.execute, CompiledStateGraph.stream, CompiledStateGraph.astream

    def execute(*args: Any, **kwargs: Any) -> Any:
        counts["direct"] += 1
        return real_execute(*args, **kwargs)

    def stream(self: Any, *args: Any, **kwargs: Any) -> Any:
        counts["pregel" if self.name == "session_graph.resize" else "bare"] += 1
        return real_stream(self, *args, **kwargs)

    def astream(self: Any, *args: Any, **kwargs: Any) -> Any:
        counts["pregel" if self.name == "session_graph.resize" else "bare"] += 1
        return real_astream(self, *args, **kwargs)

    monkeypatch.setattr(run_module, "execute", execute)
    monkeypatch.setattr(CompiledStateGraph, "stream", stream)
    monkeypatch.setattr(CompiledStateGraph, "astream", astream)
    bench.resize_vs_invoke(300, 10)  # warm-up resizes of the setup aside, below
    setup = counts["direct"] - 10 - 4 * 60
    monkeypatch.setenv(FORCE_PREGEL_ENV, "pregel")
    counts.clear()
    bench.resize_vs_invoke(300, 10)
    timed_direct, timed_pregel = 10 + 4 * 60, 4 * 60  # the no-op line; 2 sync and 2 async lines of 6 batches of 10 each
    assert counts["direct"] == timed_direct and counts["pregel"] == timed_pregel + setup
    assert "direct / Pregel" in capsys.readouterr().out


def test_section_one_refuses_to_run_when_tracing_observes_every_resize() -> None:
    bench = load_bench_speed()
    with tracing_v2_enabled(project_name="never-sent", client=MagicMock()), pytest.raises(SystemExit, match="LANGSMITH_TRACING"):
        bench.resize_vs_invoke(300, 10)
