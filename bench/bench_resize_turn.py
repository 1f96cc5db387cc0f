"""The lite prune of an agent turn: ``Session.resize()`` against another checkout, in one process.

Run: ``PYTHONPATH=. python3 bench/bench_resize_turn.py --baseline /tmp/base_main`` (or without
``--baseline``: this tree alone). Each tree's ``session_graph`` is imported afresh and kept in
its own modules (``trees.py``), so both are timed in one process.

Timed (CPU, ``time.process_time``; the machine is shared): ``Session.resize()`` (the default
policy judging again inside it, the run without Pregel, the commit and its trace record) on a
session of ``bench_turn.history`` at 10,000 messages (realistic turns: question, tool call, tool
result, answer) with ``bench_turn``'s token budget of 4,000 (exact counter, prune to 0.8 of it).
Before each call, untimed: one turn of 4 new messages appended and ``judge_resize()``; only the
turns the judge sends to a resize are timed (about one in two: each such resize is a lite prune
that drops a turn or two). Batches of ``--batch`` turns per tree, the order reversed every round;
medians of the rounds, per resize and per turn (a turn that does not resize costs nothing here).
"""

from __future__ import annotations

import argparse
from pathlib import Path
import statistics
import sys
import time
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_turn  # (its history(); it imports a session_graph, which trees.load replaces)
import trees as checkouts

HISTORY = 10_000


def session_of(session_class: Any, turns: int) -> tuple[Any, Any]:
    """A session at ``HISTORY`` messages (pruned once, as the bench agent's), and the messages of ``turns`` more turns."""
    messages = bench_turn.history(HISTORY + 4 * turns)
    session = session_class("bench").configure(limit={"tokens": bench_turn.BUDGET})
    for message in messages[:HISTORY]:
        session.append_message(message)
    session.resize()
    return session, iter(messages[HISTORY:])


def batch(session: Any, extra: Any, turns: int) -> tuple[float, int]:
    """CPU seconds spent in the ``Session.resize()`` calls of ``turns`` turns, and how many ran."""
    spent, resizes = 0.0, 0
    for _ in range(turns):
        for _ in range(4):
            session.append_message(next(extra))
        if session.judge_resize():
            start = time.process_time()
            session.resize()
            spent += time.process_time() - start
            resizes += 1
    return spent, resizes


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", help="another checkout's root (the directory holding its session_graph/)")
    parser.add_argument("--rounds", type=int, default=16)
    parser.add_argument("--batch", type=int, default=100, help="turns per tree per round")
    args = parser.parse_args()
    roots = checkouts.roots(args.baseline)
    turns = (args.rounds + 1) * args.batch
    runs = {}
    for name, root in roots.items():
        modules = checkouts.load(root)
        runs[name] = (modules, *session_of(modules["session_graph"].Session, turns))
    per_resize: dict[str, list[float]] = {name: [] for name in runs}
    per_turn: dict[str, list[float]] = {name: [] for name in runs}
    counts: dict[str, int] = dict.fromkeys(runs, 0)
    for round_ in range(args.rounds + 1):  # round 0 warms up, untimed
        for name in (list(runs) if round_ % 2 else list(reversed(runs))):
            modules, session, extra = runs[name]
            checkouts.use(modules)
            spent, resizes = batch(session, extra, args.batch)
            if round_ and resizes:
                per_resize[name].append(spent / resizes)
                per_turn[name].append(spent / args.batch)
                counts[name] += resizes
    print(f"Session.resize() of a turn (lite prune, 4 new messages a turn, {HISTORY:,} messages, token budget {bench_turn.BUDGET:,}; "
          f"CPU, medians of {args.rounds} rounds of {args.batch} turns)")
    for name in runs:
        print(f"  {name:10s}: {statistics.median(per_resize[name]) * 1e3:.4f} ms per resize, "
              f"{statistics.median(per_turn[name]) * 1e3:.4f} ms per turn ({counts[name]} resizes in {args.rounds * args.batch} turns)")
    if len(runs) == 2:
        a, b = runs
        print(f"  this tree / baseline per resize: {statistics.median(per_resize[b]) / statistics.median(per_resize[a]):.2f}x")


if __name__ == "__main__":
    main()
