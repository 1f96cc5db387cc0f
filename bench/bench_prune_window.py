"""A pruning resize by window size: what a prune costs when the budget holds a large window.

Run: ``PYTHONPATH=. python bench/bench_prune_window.py`` (``--budgets 4000,100000``, ``--rounds``,
``--baseline DIR``: also the same from another checkout, e.g. ``git archive <commit> | tar -x -C DIR``,
each tree's ``session_graph`` modules swapped into ``sys.modules`` before its batch).

Timed (CPU, ``time.process_time``; median over rounds of the mean per batch): ``Session.resize()``
calls that prune, on a session of 20,000 realistic messages (``bench_turn.history``: question,
tool call, tool result, answer) under a token budget, after each turn of 4 messages (appended
untimed); the resizes the judge skips are not counted. The window a prune leaves is printed beside
each budget. Not in ``run_all``: it writes no README figure.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from typing import Any

from bench_turn import history
from bench_turn_causes import load, use
from langchain_core.messages import BaseMessage
from trees import roots

START = 20_000


def _fresh(message: BaseMessage, j: int) -> BaseMessage:
    """``message`` with ids of its own (the history's turns repeated past its end)."""
    update: dict[str, Any] = {"id": f"{message.id}-x{j}"}
    if message.type == "tool":
        update["tool_call_id"] = f"{message.tool_call_id}-x{j - 1}"  # type: ignore[attr-defined]
    if getattr(message, "tool_calls", None):
        update["tool_calls"] = [dict(c, id=f"{c['id']}-x{j}") for c in message.tool_calls]  # type: ignore[attr-defined]
    return message.model_copy(update=update)


def measure(trees: dict[str, str], budget: int, rounds: int, batch: int) -> None:
    messages = history(START + 4 * batch * (rounds + 1) + 8)
    runs: dict[str, list[Any]] = {}
    for name, root in trees.items():
        modules = load(root)
        session = modules["session_graph"].Session("bench").configure(limit={"tokens": budget})
        for message in messages[:START]:
            session.append_message(message)
        session.resize()
        runs[name] = [modules, session, START, []]
    for round_ in range(rounds + 1):
        for run in runs.values():
            modules, session, position, times = run
            use(modules)
            spent, pruned = 0.0, 0
            for _ in range(batch):
                for j in range(position, position + 4):
                    session.append_message(_fresh(messages[j % START], j))
                position += 4
                before = len(session.current_chat_history)
                start = time.process_time()
                session.resize()
                took = time.process_time() - start
                if len(session.current_chat_history) < before:  # it pruned
                    spent, pruned = spent + took, pruned + 1
            run[2] = position
            if round_ and pruned:
                times.append(spent / pruned * 1e6)
    print(f"pruning resize under a {budget:,}-token budget, 20,000 messages of history, CPU per pruning resize, "
          f"median of {rounds} alternated batches of {batch} turns, load {os.getloadavg()[0]:.1f}:")
    for name, (_, session, _, times) in runs.items():
        print(f"  {name}: {statistics.median(times):.0f} us (window after: {len(session.current_chat_history):,} messages)")
    if len(trees) == 2:
        a, b = trees
        print(f"  {b} / {a}: {statistics.median(runs[b][3]) / statistics.median(runs[a][3]):.2f}x")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--budgets", default="4000,100000")
    parser.add_argument("--rounds", type=int, default=12)
    parser.add_argument("--batch", type=int, default=20)
    parser.add_argument("--baseline", help="another checkout's root (the directory holding its session_graph/)")
    args = parser.parse_args()
    trees = roots(args.baseline)
    for budget in (int(b) for b in args.budgets.split(",")):
        measure(trees, budget, args.rounds, args.batch)


if __name__ == "__main__":
    main()
