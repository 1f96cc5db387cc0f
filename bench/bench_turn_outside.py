"""Where the agent turn's CPU beyond the stock agent, outside SessionMiddleware's hooks, goes (issue 25 probe).

Run: ``PYTHONPATH=. python bench/bench_turn_outside.py`` (``--sizes``, ``--rounds``). The agent and
turn of ``bench_turn_causes`` (``create_agent`` + ``SessionMiddleware`` + JSONL, one tool call a
turn), the stock agent and the middleware's shape (``bench_turn_causes.shape``: our schema, hooks
and cut command, no work) in alternating batches of 8 turns, medians of the batches. Timed per turn:
the main thread's CPU (``time.thread_time``: LangGraph, the model hook, the model) and the other
threads' (``process_time - thread_time``: the ``ToolNode`` runs each tool call, and our
``wrap_tool_call``, in a thread of its own); inside the hooks (without the model's and tool's
run) by ``thread_time`` in the thread they run in. Then a control: a shape middleware whose model
hook does CPU-only work (an empty loop), touches ``--touch`` messages spread over a 100,000-message
history, or appends 1.5 kB to a file with an fsync once a turn, and what that adds outside the hook (turn - shape turn - the work's own CPU).
And, deterministic where CPU is not: the Python and C function calls per turn outside the hooks of
the shape's agent and the session's (``sys.setprofile`` in every thread; a hook's own code not
counted, its handler counted), and the functions whose count differs: what LangChain/LangGraph do
more for the session outside our hooks, whatever the machine's load.
"""

from __future__ import annotations

import argparse
import functools
import os
from pathlib import Path
import statistics
import sys
import tempfile
import time
from typing import Any

from bench_agents import _question as question
from bench_turn import Shape, balanced, bench_agent, calls_outside, flagged, history, order, session_agent
from bench_turn_causes import shape
from langchain_core.messages import HumanMessage
from turn_floor import own_cpu

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import session_graph.integrations.middleware as middleware

BATCH = 8


def timed_hooks(spent: dict[str, float]) -> None:
    for attr in ("wrap_model_call", "wrap_tool_call"):
        real = getattr(middleware.SessionMiddleware, attr)

        def hook(self: Any, request: Any, handler: Any, real: Any = real, label: str = attr) -> Any:
            synced = getattr(getattr(self.binding.manager, "store", None), "fsync", True)
            return own_cpu(functools.partial(real, self), request, handler, spent, label if synced else label + " nosync",
                           time.thread_time)

        setattr(middleware.SessionMiddleware, attr, hook)


def alternate(agents: dict[str, tuple[Any, Any]], rounds: int, reset: dict[str, float]) -> tuple[dict[str, float], dict[str, float], int]:
    """Median main-thread and other-thread CPU ms per turn of each agent, and the rounds run (``rounds``
    raised to whole cycles of ``bench_turn.order``, which turns the agents' order each round)."""
    turn = [0]

    def run(agent: Any, config: Any) -> None:
        turn[0] += 1
        agent.invoke({"messages": [HumanMessage(content=question(turn[0]))]}, config)

    for agent, config in agents.values():
        for _ in range(3):
            run(agent, config)
    for label in reset:
        reset[label] = 0.0
    main: dict[str, list[float]] = {name: [] for name in agents}
    other: dict[str, list[float]] = {name: [] for name in agents}
    rounds = balanced(rounds, len(agents))
    for round_ in range(rounds):
        for name in order(list(agents), round_):
            agent, config = agents[name]
            process, thread = time.process_time(), time.thread_time()
            for _ in range(BATCH):
                run(agent, config)
            thread = time.thread_time() - thread
            main[name].append(thread / BATCH * 1e3)
            other[name].append((time.process_time() - process - thread) / BATCH * 1e3)
    return ({n: statistics.median(v) for n, v in main.items()}, {n: statistics.median(v) for n, v in other.items()}, rounds)


def busy(spent: dict[str, float], label: str, work: Any) -> Any:
    class Busy(Shape):
        def wrap_model_call(self, request: Any, handler: Any) -> Any:
            start = time.thread_time()
            work()
            spent[label] += time.thread_time() - start
            return super().wrap_model_call(request, handler)
    return Busy.of(middleware)


def viewed(manager: Any, spent: dict[str, float]) -> Any:
    """The shape, its model handed the session's view (as the session's first model call built it,
    then kept): what the model's larger input costs; the override's own CPU counted in ``spent``."""
    session, fixed = manager.get_or_create("bench"), []

    class Viewed(Shape):
        def wrap_model_call(self, request: Any, handler: Any) -> Any:
            start = time.thread_time()
            if not fixed:
                fixed.append(middleware.SessionMiddleware._with_view(session, request))
            view = request.override(messages=fixed[0].messages, system_message=fixed[0].system_message)
            spent["view"] += time.thread_time() - start
            return super().wrap_model_call(request, lambda _: handler(view))
    return Viewed.of(middleware)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10000,100000")
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--touch", type=int, default=400)
    parser.add_argument("--calls", type=int, default=20, help="turns whose function calls are counted")
    args = parser.parse_args()
    spent = {"wrap_model_call": 0.0, "wrap_tool_call": 0.0, "view": 0.0, "wrap_model_call nosync": 0.0, "wrap_tool_call nosync": 0.0}
    timed_hooks(spent)
    flagged(middleware.SessionMiddleware)
    flagged(Shape)
    config = {"configurable": {"thread_id": "bench"}}
    with tempfile.TemporaryDirectory() as tmp:
        for size in (int(s) for s in args.sizes.split(",")):
            agent, _, manager = session_agent(Path(tmp), size)
            unsynced, _, loose = session_agent(Path(tempfile.mkdtemp(dir=tmp)), size)
            loose.store.fsync = False
            agents = {"stock": (bench_agent(), None), "shape": (bench_agent(shape(dict(sys.modules))), config),
                      "shape + view": (bench_agent(viewed(manager, spent)), config),
                      "session": (agent, config), "session, fsync off": (unsynced, config)}
            main_ms, other_ms, rounds = alternate(agents, args.rounds, spent)
            model, tool, view, model_off = (spent[k] / (rounds * BATCH) * 1e3
                                            for k in ("wrap_model_call", "wrap_tool_call", "view", "wrap_model_call nosync"))
            print(f"agent turn at {size:,} messages, CPU ms per turn, medians of {rounds} rounds of alternated batches of {BATCH} (order turned each round), "
                  f"load {os.getloadavg()[0]:.1f}: main thread stock {main_ms['stock']:.3f} / shape {main_ms['shape']:.3f} / "
                  f"session {main_ms['session']:.3f} (model hooks inside {model:.3f}); other threads stock {other_ms['stock']:.3f} / "
                  f"shape {other_ms['shape']:.3f} / session {other_ms['session']:.3f} (tool hook inside {tool:.3f})")
            print(f"  beyond the shape outside the hooks: main thread {main_ms['session'] - main_ms['shape'] - model:.3f}, "
                  f"other threads {other_ms['session'] - other_ms['shape'] - tool:.3f}; of the main thread's, the model handed "
                  f"the session's view (shape + view - shape - the override) {main_ms['shape + view'] - main_ms['shape'] - view:.3f}")
            print(f"  the same store with fsync off: main thread {main_ms['session, fsync off']:.3f} (model hooks inside {model_off:.3f}), "
                  f"beyond the shape outside the hooks {main_ms['session, fsync off'] - main_ms['shape'] - model_off:.3f}")
            calls = calls_outside({"shape": agents["shape"][:2], "session": (agent, config)}, args.calls)
            per = {name: sum(found.values()) / args.calls for name, found in calls.items()}
            diff = {key: (calls["session"][key] - calls["shape"][key]) / args.calls for key in calls["session"] | calls["shape"]}
            top = sorted((key for key in diff if abs(diff[key]) >= 1), key=lambda key: -abs(diff[key]))[:6]
            print(f"  function calls per turn outside the hooks (Python and C, sys.setprofile in every thread, {args.calls} turns; "
                  f"deterministic but for waits on threads): shape {per['shape']:,.0f}, session {per['session']:,.0f} ({per['session'] - per['shape']:+,.0f}); "
                  f"those differing by one or more a turn: " + (", ".join(f"{k[1]} ({k[0]}) {diff[k]:+.0f}" for k in top) or "none"))
    big = history(100_000)
    sample = big[:: max(1, len(big) // args.touch)]
    work = {"cpu only": 0.0, "touching": 0.0, "fsync": 0.0}
    log = Path(tempfile.mkdtemp()) / "control.log"
    count = args.touch * 30  # an empty loop of about the touching work's CPU

    def cpu_only() -> None:
        for _ in range(count):
            pass

    def touching() -> None:
        for message in sample:
            len(message.content)

    calls = [0]

    def synced() -> None:  # on a turn's first model call only: one fsync a turn, as the session's save
        calls[0] += 1
        if calls[0] % 2 == 0:
            return
        with open(log, "ab") as handle:
            handle.write(b"x" * 1500 + b"\n")
            handle.flush()
            os.fsync(handle.fileno())

    agents = {"shape": (bench_agent(shape(dict(sys.modules))), None)}
    for label, fn in (("cpu only", cpu_only), ("touching", touching), ("fsync", synced)):
        agents[label] = (bench_agent(busy(work, label, fn)), None)
    main_ms, _, rounds = alternate(agents, args.rounds, work)
    print(f"control, a shape middleware whose model hook works (main thread, load {os.getloadavg()[0]:.1f}):")
    for label in ("cpu only", "touching", "fsync"):
        inside = work[label] / (rounds * BATCH) * 1e3
        print(f"  {label}{f' {len(sample)} messages of 100,000' if label == 'touching' else ''}{' (a 1.5 kB append + fsync on the first of the two model calls of a turn)' if label == 'fsync' else ''}: the work {inside:.3f} ms, "
              f"added outside the hook (turn - shape turn - work) {main_ms[label] - main_ms['shape'] - inside:.3f}")


if __name__ == "__main__":
    main()
