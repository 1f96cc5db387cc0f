"""An agent turn with the session middleware against the same turn of a stock agent.

Run: ``python bench/bench_turn.py`` (``--quick`` for fewer rounds). A ``create_agent`` agent
with a fake model (each turn: a ~200-char question, one tool call, a ~0.7 kB tool result, a
~0.6 kB answer) runs one turn per ``invoke``:

- stock: no middleware, no checkpointer, the turn's input only (the floor of a turn);
- session: ``SessionMiddleware`` over a JSONL ``SessionManager`` (fsync on) whose session
  already holds 10,000 (and 100,000) messages of such turns, token budget 4,000.

- floor: a no-op ``AgentMiddleware`` with the same one hook as ``SessionMiddleware``
  (``wrap_model_call`` calling the handler): what any middleware costs in LangChain; and one
  with two hooks (``before_model`` returning None too), what the middleware's former shape cost.

Timed: CPU time (``time.process_time``: the machine is shared) per ``invoke``, stock,
session and the two floors in alternating batches, median of the batches; ``os.fsync`` calls per turn
are counted by wrapping ``os.fsync``. Goals (issue 25): session / stock <= 1.2x, 1 fsync a turn.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path
import statistics
import sys
import tempfile
import time
from typing import Any

# the same agent, tools and replies as bench_agents (one definition of the workload)
from bench_agents import ANSWER, _Model, _replies, lookup
from bench_agents import _question as question
from langchain.agents import create_agent
from langchain.agents.middleware import AgentMiddleware
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the checkout this bench lives in, not an installed copy
from session_graph import Session, SessionManager
from session_graph.integrations import SessionMiddleware


def history(messages: int) -> list[BaseMessage]:
    """``messages`` messages of realistic turns (question, tool call, tool result, answer)."""
    out: list[BaseMessage] = []
    turn = 0
    while len(out) < messages:
        call = f"old_{turn}"
        out += [HumanMessage(content=question(turn), id=f"h{turn}"),
                AIMessage(content="", tool_calls=[{"id": call, "name": "lookup", "args": {"topic": f"topic {turn}"}}], id=f"a{turn}"),
                ToolMessage(content=lookup.invoke({"topic": f"topic {turn}"}), tool_call_id=call, id=f"t{turn}"),
                AIMessage(content=f"Answer {turn}: " + (ANSWER * 8)[:590], id=f"r{turn}")]
        turn += 1
    return out[:messages]


class FsyncCounter:
    """Counts ``os.fsync`` calls while installed."""

    def __init__(self) -> None:
        self.calls = 0
        self._real = os.fsync

    def __enter__(self) -> FsyncCounter:
        real = self._real

        def counted(fd: int) -> None:
            self.calls += 1
            real(fd)

        os.fsync = counted  # type: ignore[assignment]
        return self

    def __exit__(self, *exc: Any) -> None:
        os.fsync = self._real  # type: ignore[assignment]


def session_agent(folder: Path, size: int) -> tuple[Any, dict[str, Any], SessionManager]:
    manager = SessionManager(folder / f"sessions-{size}")
    manager.session_factory = lambda key: Session(key).configure(limit={"tokens": 4000})
    session = manager.get_or_create("bench")
    for message in history(size):
        session.append_message(message)
    session.resize()
    manager.save(session)
    agent = create_agent(_Model(messages=_replies()), tools=[lookup], middleware=[SessionMiddleware(manager=manager)],
                         system_prompt="You are a research assistant.")
    return agent, {"configurable": {"thread_id": "bench"}}, manager


class NoOp(AgentMiddleware):
    """The floor of any middleware: the one hook ``SessionMiddleware`` has, doing nothing."""

    def wrap_model_call(self, request: Any, handler: Any) -> Any:
        return handler(request)


class NoOpTwo(NoOp):
    """A no-op with two hooks (``before_model`` too): what a middleware of that shape costs."""

    def before_model(self, state: Any, runtime: Any) -> None:
        return None


def measure(size: int, rounds: int, batch: int, folder: Path) -> dict[str, float]:
    """CPU ms per turn (stock, session, no-op floor), the ratios and fsyncs per session turn at ``size`` messages."""
    stock = create_agent(_Model(messages=_replies()), tools=[lookup], system_prompt="You are a research assistant.")
    floor = create_agent(_Model(messages=_replies()), tools=[lookup], middleware=[NoOp()], system_prompt="You are a research assistant.")
    floor2 = create_agent(_Model(messages=_replies()), tools=[lookup], middleware=[NoOpTwo()], system_prompt="You are a research assistant.")
    agent, config, _ = session_agent(folder, size)
    turn = [0]

    def run_stock() -> None:
        turn[0] += 1
        stock.invoke({"messages": [HumanMessage(content=question(turn[0]))]})

    def run_floor() -> None:
        turn[0] += 1
        floor.invoke({"messages": [HumanMessage(content=question(turn[0]))]})

    def run_floor2() -> None:
        turn[0] += 1
        floor2.invoke({"messages": [HumanMessage(content=question(turn[0]))]})

    def run_session() -> None:
        turn[0] += 1
        agent.invoke({"messages": [HumanMessage(content=question(turn[0]))]}, config)

    runs = (("stock", run_stock), ("floor", run_floor), ("floor2", run_floor2), ("session", run_session))
    for _, fn in runs:  # warm up
        for _ in range(3):
            fn()
    times: dict[str, list[float]] = {name: [] for name, _ in runs}
    fsyncs = turns = 0
    for _ in range(rounds):
        for name, fn in runs:
            with FsyncCounter() as counter:
                start = time.process_time()
                for _ in range(batch):
                    fn()
                times[name].append((time.process_time() - start) / batch)
            if name == "session":
                fsyncs += counter.calls
                turns += batch
    stock_ms, session_ms = statistics.median(times["stock"]) * 1e3, statistics.median(times["session"]) * 1e3
    floor_ms, floor2_ms = statistics.median(times["floor"]) * 1e3, statistics.median(times["floor2"]) * 1e3
    return {"stock_ms": stock_ms, "session_ms": session_ms, "ratio": session_ms / stock_ms, "fsyncs": fsyncs / turns,
            "floor_ms": floor_ms, "floor": floor_ms / stock_ms, "floor2_ms": floor2_ms, "floor2": floor2_ms / stock_ms}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--sizes", default="10000,100000")
    args = parser.parse_args()
    rounds, batch = (5, 4) if args.quick else (15, 6)
    with tempfile.TemporaryDirectory() as tmp:
        for size in (int(s) for s in args.sizes.split(",")):
            r = measure(size, rounds, batch, Path(tmp))
            print(f"agent turn (create_agent, 1 tool call), CPU: SessionMiddleware + JSONL store at {size:,} messages "
                  f"{r['session_ms']:.2f} ms / stock agent (no middleware, no checkpointer) {r['stock_ms']:.2f} ms = "
                  f"{r['ratio']:.2f}x (goal <= 1.2); fsyncs per turn {r['fsyncs']:.1f} (goal 1)")
            print(f"  floor of any middleware: a no-op AgentMiddleware (wrap_model_call, the one hook SessionMiddleware has) "
                  f"{r['floor_ms']:.2f} ms / stock agent = {r['floor']:.2f}x; with before_model too (two hooks) "
                  f"{r['floor2_ms']:.2f} ms = {r['floor2']:.2f}x")


if __name__ == "__main__":
    main()
