"""Readers of arrival stamps (``Session.arrived_at``) against other checkouts, in one process.

Run: ``PYTHONPATH=. python3 bench/bench_arrivals_ab.py --baseline DIR [--baseline DIR2]``
(DIR: e.g. ``git archive <commit> | tar -x -C DIR``). Each tree's ``session_graph`` is imported
afresh and kept in its own modules (as ``bench_append_ab`` does), so all are timed in one process.

One session per tree, ``--messages`` short messages appended (user and assistant alternating,
each stamped by ``append_message``). Timed (CPU, ``time.process_time``; the machine is shared),
batches alternated between trees, the order turned every round (``bench_turn.order``: with two
baselines too, each tree in every place equally often; ``--rounds`` raised to whole cycles of it),
medians of the rounds:
- ``get``: ``arrived_at.get(id)`` of every message;
- ``search since/until``: ``Session.search(word, since=..., until=...)`` (the index already
  synced: the time filter of the rank and the hits' stamps);
- ``save stamps``: a full save's records' stamps of every message, as each tree's
  ``session_save`` reads them (``arrived_at.get(id, now)`` each, or ``resize.arrivals.stamps_of``
  where the tree has it); the records themselves (``message_record``: pydantic's dump, the same
  code in every tree) are not timed;
- ``stamp_at``: the text of the same 20,000 stamp numbers (this tree's session's, in order)
  by each tree's ``_base/ids.stamp_at`` (trees without one are left out).
"""

from __future__ import annotations

import argparse
from pathlib import Path
import statistics
import time
from typing import Any

from bench_turn import balanced, order
from langchain_core.messages import AIMessage, HumanMessage
import trees as checkouts


def load(root: str) -> dict[str, Any]:
    """The modules used here of the checkout at ``root``, imported afresh (``checkouts.load``;
    main before today has no arrivals module: its stamps are a dict)."""
    modules = checkouts.load(root, optional=("session_graph.resize.arrivals",))
    arrivals, ids = modules.get("session_graph.resize.arrivals"), modules["session_graph._base.ids"]
    return {"Session": modules["session_graph"].Session, "stamps_of": getattr(arrivals, "stamps_of", None),
            "stamp_at": getattr(ids, "stamp_at", None)}


def build(tree: dict[str, Any], count: int) -> Any:
    session = tree["Session"]()
    for i in range(count):
        kind = HumanMessage if i % 2 == 0 else AIMessage
        session.append_message(kind(f"turn {i} about the window budget {'alpha' if i % 7 == 0 else 'beta'}", id=f"m{i}"))
    return session


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", action="append", required=True, help="another checkout's root (repeatable)")
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--messages", type=int, default=20_000)
    args = parser.parse_args()
    roots = {f"baseline {Path(b).name}": str(Path(b).resolve()) for b in args.baseline} | {"this tree": checkouts.HERE}
    trees = {name: load(root) for name, root in roots.items()}
    sessions = {name: build(tree, args.messages) for name, tree in trees.items()}
    # the stamps span the appends: bounds inside them
    bounds = {name: (s.arrived_at[s.full_chat_history[len(s.full_chat_history) // 4].id],
                     s.arrived_at[s.full_chat_history[3 * len(s.full_chat_history) // 4].id]) for name, s in sessions.items()}
    for name, session in sessions.items():
        session.search("alpha", since=bounds[name][0], until=bounds[name][1])  # index synced

    def get(name: str) -> Any:
        stamps = sessions[name].arrived_at
        return [stamps.get(m.id) for m in sessions[name].full_chat_history]

    def ranked(name: str) -> Any:
        since, until = bounds[name]
        return [(h.seq, h.ts) for h in sessions[name].search("alpha", k=10, since=since, until=until)]

    def save(name: str) -> Any:
        stamps_of, stamps, history = trees[name]["stamps_of"], sessions[name].arrived_at, sessions[name].full_chat_history
        if stamps_of is not None:
            return stamps_of(stamps, history, "now")
        return [stamps.get(m.id or "", "now") for m in history]

    mine = sessions["this tree"]
    numbers = [n for n in mine.arrived_at.instants([m.id or "" for m in mine.full_chat_history]) if n is not None]

    def texts(name: str) -> Any:
        stamp_at = trees[name]["stamp_at"]
        return [stamp_at(n) for n in numbers]

    cases = {"get": get, "search since/until": ranked, "save stamps": save, "stamp_at": texts}
    for label, case in cases.items():
        names = [name for name in trees if label != "stamp_at" or trees[name]["stamp_at"] is not None]
        results = {name: case(name) for name in names}
        if label == "search since/until":  # each tree's session has its own stamps: the same hits, not the same times
            assert len({repr([seq for seq, _ in r]) for r in results.values()}) == 1, f"{label}: trees disagree"
        if label == "stamp_at":
            assert len({repr(r) for r in results.values()}) == 1, "stamp_at: trees disagree"
        times: dict[str, list[float]] = {name: [] for name in names}
        rounds = balanced(args.rounds, len(names))
        for round_ in range(rounds):
            for name in order(names, round_):
                start = time.process_time()
                case(name)
                times[name].append(time.process_time() - start)
        medians = {name: statistics.median(t) for name, t in times.items()}
        here = medians["this tree"]
        print(f"{label} ({args.messages:,} messages, CPU ms, median of {rounds}):")
        for name, value in medians.items():
            print(f"  {name:<24} {value * 1000:8.2f} ms   this tree / it: {here / value:5.2f}x")


if __name__ == "__main__":
    main()
