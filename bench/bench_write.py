"""One write of an agent turn (the JSONL store's appended save) against its floor, optionally A/B with another tree.

Run: ``PYTHONPATH=. python3 bench/bench_write.py [--baseline DIR] [--size 10000] [--rounds 60] [--batch 10]``
(DIR: another checkout's root, e.g. ``/tmp/base_main``; each tree's ``session_graph`` modules are
imported afresh and swapped into ``sys.modules`` before its batch, as ``bench_turn_causes``
does, so both trees are timed in one process).

A ``SessionManager`` on a JSONL store (fsync on) holds a session of ``size`` messages under a lite
policy (40 messages); each step is an agent turn's writes: the user's input (one message) saved
durably (``save(durable=True)``: the write with the fsync), then the turn's end (an assistant tool
call, its tool result and the reply: three messages) saved with ``durable=False``, then, when the
policy asks, a lite resize and its save (``durable=False``). Timed (CPU, ``time.process_time``;
the machine is shared): each ``SessionManager.save`` by kind, and right after it the floor of
that write: one ``os.write`` of as many bytes as the save appended to the log, to a file held
open with ``O_APPEND`` in the same folder, plus one ``os.fsync`` for the durable one. Trees
alternate by batch (the order reversed every round); medians of the rounds' per-write means.
Then, untimed, the syscalls one write of each kind makes (``os`` and ``fcntl`` functions
wrapped and counted; ``getpid`` counted as the C library makes it a syscall).
"""

from __future__ import annotations

import argparse
from collections import Counter
import fcntl
import os
from pathlib import Path
import statistics
import tempfile
import time
from typing import Any

from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
import trees as checkouts

QUESTION = "How does the session keep its window inside the budget when tool results are large? " * 2
ANSWER = "It prunes the oldest messages of the window after a turn and folds them into the memo when asked. " * 3
RESULT = "result: the window holds the newest messages within the token budget; older ones are in the history. " * 3
KINDS = ("input, durable (1 message)", "turn end, durable=False (3 messages)", "after a lite resize, durable=False")
SYSCALLS = ("stat", "fstat", "lstat", "open", "close", "write", "fsync", "lseek", "utime", "replace", "getpid", "read")


class Tree:
    """One tree's manager, session and floor file; ``step`` runs one turn's writes."""

    def __init__(self, modules: dict[str, Any], folder: Path, size: int, store: str = "jsonl") -> None:
        self.modules = modules
        checkouts.use(modules)
        folder.mkdir(parents=True, exist_ok=True)
        stores = modules["session_graph.stores"]
        target = (stores.SqliteStore(folder / "sessions.db") if store == "sqlite" else
                  stores.PostgresStore(os.environ["SESSION_GRAPH_PG_DSN"]) if store == "postgres" else folder)
        self.manager = modules["session_graph"].SessionManager(target, tenant=f"bench-{folder.name}-{os.getpid()}")
        session = self.manager.get_or_create("bench").use_lite(messages=40)
        for i in range(size // 2):
            session.append_message(HumanMessage(content=f"{i} {QUESTION}"))
            session.append_message(AIMessage(content=f"{i} {ANSWER}"))
        session.resize()
        self.manager.save(session)
        self.session, self.turn = session, 0
        self.log = next(folder.rglob("*.jsonl")) if store == "jsonl" else folder / "sessions.db-wal"
        if not self.log.exists():  # Postgres: no file here grows; the floor is an empty write
            self.log.touch()
        self.floor = os.open(folder / "floor.jsonl", os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)

    def _save(self, durable: bool, spent: dict[str, list[float]], kind: str) -> None:
        before = self.log.stat().st_size
        start = time.process_time()
        self.manager.save(self.session, durable=durable)
        spent[kind].append(time.process_time() - start)
        data = b"x" * (self.log.stat().st_size - before)
        start = time.process_time()
        os.write(self.floor, data)
        if durable:
            os.fsync(self.floor)
        spent["floor: " + kind].append(time.process_time() - start)

    def step(self, spent: dict[str, list[float]]) -> None:
        self.turn += 1
        t, session = self.turn, self.session
        session.append_message(HumanMessage(content=f"w{t} {QUESTION}"))
        self._save(True, spent, KINDS[0])
        call = {"name": "lookup", "args": {"query": f"window {t}"}, "id": f"call-{t}", "type": "tool_call"}
        session.append_message(AIMessage(content="", tool_calls=[call]))
        session.append_message(ToolMessage(content=f"{t} {RESULT}", tool_call_id=f"call-{t}", name="lookup"))
        session.append_message(AIMessage(content=f"w{t} {ANSWER}"))
        self._save(False, spent, KINDS[1])
        if session.judge_resize() is not None:
            session.resize()
            self._save(False, spent, KINDS[2])


def count_syscalls(tree: Tree, turns: int) -> dict[str, Counter[str]]:
    """The syscalls of each kind of write, per write (``os``/``fcntl`` wrapped, untimed)."""
    checkouts.use(tree.modules)
    counts: dict[str, Counter[str]] = {kind: Counter() for kind in KINDS}
    writes: Counter[str] = Counter()
    current: list[Counter[str]] = [Counter()]
    real = {name: getattr(os, name) for name in SYSCALLS}
    real_flock = fcntl.flock

    def wrapped(name: str, function: Any) -> Any:
        def call(*args: Any, **kwargs: Any) -> Any:
            current[0][name] += 1
            return function(*args, **kwargs)
        return call

    save = tree.manager.save
    try:
        for name, function in real.items():
            setattr(os, name, wrapped(name, function))
        fcntl.flock = wrapped("flock", real_flock)
        for _ in range(turns):
            tree.turn += 1
            t, session = tree.turn, tree.session
            session.append_message(HumanMessage(content=f"s{t} {QUESTION}"))
            current[0], kind = counts[KINDS[0]], KINDS[0]
            writes[kind] += 1
            save(session, durable=True)
            call = {"name": "lookup", "args": {"query": f"window {t}"}, "id": f"call-s{t}", "type": "tool_call"}
            session.append_message(AIMessage(content="", tool_calls=[call]))  # the timed turn end's three messages
            session.append_message(ToolMessage(content=f"{t} {RESULT}", tool_call_id=f"call-s{t}", name="lookup"))
            session.append_message(AIMessage(content=f"s{t} {ANSWER}"))
            current[0], kind = counts[KINDS[1]], KINDS[1]
            writes[kind] += 1
            save(session, durable=False)
            current[0] = Counter()
            if session.judge_resize() is not None:
                session.resize()
                current[0], kind = counts[KINDS[2]], KINDS[2]
                writes[kind] += 1
                save(session, durable=False)
                current[0] = Counter()
    finally:
        for name, function in real.items():
            setattr(os, name, function)
        fcntl.flock = real_flock
    return {kind: Counter({name: n / writes[kind] for name, n in counts[kind].items()}) for kind in KINDS if writes[kind]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", help="another checkout's root (the directory holding its session_graph/)")
    parser.add_argument("--size", type=int, default=10000)
    parser.add_argument("--rounds", type=int, default=60)
    parser.add_argument("--batch", type=int, default=10, help="turns per batch")
    parser.add_argument("--store", choices=("jsonl", "sqlite", "postgres"), default="jsonl",
                        help="sqlite and postgres (SESSION_GRAPH_PG_DSN): no floor (their writes are not "
                             "the turn's bytes appended); postgres: CPU of this process only")
    args = parser.parse_args()
    roots = checkouts.roots(args.baseline)
    with tempfile.TemporaryDirectory() as folder:
        trees = {name: Tree(checkouts.load(root), Path(folder) / name.replace(" ", "_"), args.size, args.store) for name, root in roots.items()}
        means: dict[str, dict[str, list[float]]] = {name: {} for name in trees}
        for round_ in range(args.rounds):
            for name in (list(trees) if round_ % 2 else list(reversed(trees))):
                tree = trees[name]
                checkouts.use(tree.modules)
                spent: dict[str, list[float]] = {kind: [] for kind in KINDS} | {"floor: " + kind: [] for kind in KINDS}
                for _ in range(args.batch):
                    tree.step(spent)
                for kind, values in spent.items():
                    if values:
                        means[name].setdefault(kind, []).append(sum(values) / len(values) * 1e6)
        load_now = os.getloadavg()[0]
        timed = {"jsonl": "JSONL, fsync on: CPU us per SessionManager.save; floor: one os.write of the bytes it appended "
                          "(+ os.fsync when durable)",
                 "sqlite": "SQLite, WAL: CPU us per SessionManager.save; no floor (SQLite writes WAL pages, not the turn's bytes)",
                 "postgres": "Postgres: CPU us of this process per SessionManager.save (the server's CPU not counted); no floor"}
        print(f"one write of an agent turn at {args.size:,} messages ({timed[args.store]}), medians of "
              f"{args.rounds} rounds of {args.batch} turns per tree, trees alternated (load {load_now:.1f}):")
        for kind in KINDS:
            row = []
            for name in trees:
                if kind in means[name]:
                    ours, floor = statistics.median(means[name][kind]), statistics.median(means[name]["floor: " + kind])
                    row.append(f"{name} {ours:.1f}" + (f" (floor {floor:.1f}: {ours / floor:.1f}x)" if args.store == "jsonl" else ""))
            if len(trees) == 2 and all(kind in means[name] for name in trees):
                a, b = (statistics.median(means[name][kind]) for name in trees)
                row.append(f"this tree / baseline {b / a:.2f}")
            print(f"  {kind}: " + "; ".join(row))
        for name, tree in trees.items():
            counts = count_syscalls(tree, 30)
            print(f"  syscalls per write ({name}; floor: write + fsync when durable, write alone else):")
            for kind, counted in counts.items():
                total = sum(counted.values())
                print(f"    {kind}: {total:.1f}: " + ", ".join(f"{n} {v:.2f}".rstrip("0").rstrip(".") for n, v in sorted(counted.items())))
            os.close(tree.floor)


if __name__ == "__main__":
    main()
