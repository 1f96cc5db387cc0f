"""bench_turn's third and fourth baselines hold what their labels say: the remembering stock agent's
thread keeps every message of the seeded history and grows by each turn; the trimming one (LangChain's
documented ``before_model`` + ``trim_messages``) keeps a valid window within the session's budget; the work
floor (``turn_floor.WorkFloor``) does its work and only that: one fsync a turn, the input on disk before the
first model call, each message written once, a view within the budget (its parts alone do their part only)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from bench_util import load_bench_turn
from langchain.agents.middleware import AgentMiddleware
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
import pytest


def test_the_remembering_baseline_holds_the_whole_history_and_each_turn() -> None:
    bench = load_bench_turn()
    agent, config, tokens = bench.remembering_stock(40)
    seeded = agent.get_state(config).values["messages"]
    assert [m.id for m in seeded[:40]] == [m.id for m in bench.history(40)]  # nothing trimmed
    assert len(seeded) == 44 and tokens == bench.exact_counter()(seeded)  # + the seeding turn's 4 messages
    agent.invoke({"messages": [HumanMessage(content=bench.question(1))]}, config)
    after = agent.get_state(config).values["messages"]
    assert len(after) == 48 and isinstance(after[-1], AIMessage) and not after[-1].tool_calls


def test_the_trimming_baseline_keeps_a_valid_window_within_the_budget() -> None:
    bench = load_bench_turn()
    agent, config = bench.trimming_stock()
    for turn in range(3):
        agent.invoke({"messages": [HumanMessage(content=bench.question(turn))]}, config)
        window = agent.get_state(config).values["messages"]
        before_answer = window[:-1]  # the model's last input: the window the trim kept, then its answer
        assert bench.exact_counter()(before_answer) <= bench.BUDGET < bench.exact_counter()(bench.history(bench.SEED))
        assert isinstance(window[0], HumanMessage)  # trim_messages(start_on="human")
        calls = {c["id"] for m in window if isinstance(m, AIMessage) for c in m.tool_calls}
        assert all(m.tool_call_id in calls for m in window if isinstance(m, ToolMessage))  # no orphaned result
        assert window[-1].content.startswith("Answer")


class _LogLines(AgentMiddleware):
    """Counts the lines of a log file at each model call (inside the middleware under test)."""

    def __init__(self, path: Path) -> None:
        super().__init__()
        self.path, self.seen = path, []

    def wrap_model_call(self, request: Any, handler: Any) -> Any:
        self.seen.append(self.path.read_bytes().count(b"\n"))
        return handler(request)


def test_the_work_floor_fsyncs_the_input_first_writes_each_message_once_and_keeps_its_view_within_the_budget(tmp_path: Path) -> None:
    bench = load_bench_turn()
    log = tmp_path / "floor.jsonl"
    seed = bench.history(bench.SEED)
    floor = bench.WorkFloor(log, bench.BUDGET, seed)
    lines, spy = _LogLines(log), bench._Spy()
    agent = bench.bench_agent(floor, lines, spy)  # outermost first: the floor, then what the model is handed
    count = bench.exact_counter()
    try:
        for turn in range(6):
            before = len(log.read_bytes().splitlines())
            with bench.FsyncCounter() as fsyncs:
                out = agent.invoke({"messages": [HumanMessage(content=bench.question(turn))]})
            assert fsyncs.calls == 1  # one fsync a turn: the input's append
            assert lines.seen[-2:] == [before + 1, before + 1]  # the input on disk before the first model call; the rest not before the end
            written = [json.loads(line) for line in log.read_bytes().splitlines()]
            assert len(written) == before + 4 and written[-4:] == [m.model_dump() for m in out["messages"]]  # each message once, in order
            for view in spy.inputs[-2:]:
                assert view[0].content == bench.PROMPT and count(view) <= bench.BUDGET  # the system prompt counted against the budget
                assert not isinstance(view[1], ToolMessage)  # no result without its call
                calls = {c["id"] for m in view if isinstance(m, AIMessage) for c in m.tool_calls}
                assert all(m.tool_call_id in calls for m in view if isinstance(m, ToolMessage))
            first, second = spy.inputs[-2:]
            assert first[-1] is out["messages"][0] and second[-3:] == out["messages"][:3]  # the newest messages, as they came
            assert len(first) > 30 and first[1].id in {m.id for m in seed}  # the seeded history's newest, ~40 messages
            assert floor.total == count([m for m, _ in floor.window])  # the running total is the exact count of what it holds
    finally:
        floor.close()


def test_the_work_floors_parts_alone_do_their_part_only(tmp_path: Path) -> None:
    bench = load_bench_turn()
    durable = bench.WorkFloor(tmp_path / "durable.jsonl", bench.BUDGET, count=False, rest=False)
    counts = bench.WorkFloor(tmp_path / "counts.jsonl", bench.BUDGET, durable=False, rest=False)
    spy = bench._Spy()
    try:
        for middleware, fsyncs_a_turn, lines_a_turn in ((durable, 1, 1), (counts, 0, 0)):
            agent = bench.bench_agent(middleware, spy)
            for turn in range(2):
                with bench.FsyncCounter() as fsyncs:
                    out = agent.invoke({"messages": [HumanMessage(content=bench.question(turn))]})
                assert fsyncs.calls == fsyncs_a_turn and spy.inputs[-1][1:] == out["messages"][:3]  # the agent's own input, no view
            assert middleware.path.read_bytes().count(b"\n") == 2 * lines_a_turn and not middleware.window
    finally:
        durable.close()
        counts.close()
    with pytest.raises(ValueError, match="count=True"):
        bench.WorkFloor(tmp_path / "x.jsonl", bench.BUDGET, count=False)


def test_the_clocked_floor_does_the_floors_work_and_puts_the_clock_back(tmp_path: Path) -> None:
    bench = load_bench_turn()
    real = os.write, os.fsync
    floor = bench.Clocked(tmp_path / "clocked.jsonl", bench.BUDGET, bench.history(8))
    try:
        parts = bench.hook_cpu(floor, 2)
        assert set(parts) == {"hooks", "fsync", "write", "counts"}
        assert (os.write, os.fsync) == real  # the pass's wrappers removed
        assert floor.path.read_bytes().count(b"\n") == 8 + 5 * 4  # its 3 unclocked and 2 clocked turns written, once each
        assert floor.total == bench.exact_counter()([m for m, _ in floor.window])
    finally:
        floor.close()
