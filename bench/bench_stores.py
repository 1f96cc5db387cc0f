"""Persisting a turn and loading a session, per store, against rewriting the whole file.

Run: ``python bench/bench_stores.py`` (set ``SESSION_GRAPH_PG_DSN`` to include Postgres;
``bash .ci/postgres.sh`` starts a throwaway server). For histories of 1,000 and 100,000
messages it prints the time to persist one turn (two messages, fsynced) with each store,
and the ratio to rewriting the whole JSONL transcript on every save (what nanobot's
SessionManager does), measured in the same run on the same disk. Then the time to load a
100,000-message session.
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path
import statistics
import tempfile
import time

from langchain_core.messages import AIMessage, HumanMessage, message_to_dict

from session_graph.stores import JsonlStore, PostgresStore, SessionManager, SessionStore, SqliteStore
from session_graph.stores.codec import message_record

TEXT = "The session keeps the full history and sends only the window to the model. "


def _messages(start: int, count: int) -> list:
    return [(HumanMessage if i % 2 == 0 else AIMessage)(content=f"{i}: {TEXT}", id=f"m{i}") for i in range(start, start + count)]


def _stores(root: Path) -> dict[str, SessionStore]:
    stores: dict[str, SessionStore] = {"jsonl": JsonlStore(root / "jsonl"), "sqlite": SqliteStore(root / "s.sqlite3")}
    if os.environ.get("SESSION_GRAPH_PG_DSN"):
        stores["postgres"] = PostgresStore(os.environ["SESSION_GRAPH_PG_DSN"])
    return stores


def rewrite_per_save(root: Path, size: int, turns: int) -> float:
    """The baseline: every save rewrites the whole transcript (and fsyncs it)."""
    path = root / "rewrite.jsonl"
    messages = [message_to_dict(m) for m in _messages(0, size)]
    times = []
    for turn in range(turns):
        messages += [message_to_dict(m) for m in _messages(size + 2 * turn, 2)]
        t0 = time.perf_counter()
        with open(path, "w") as handle:
            for message in messages:
                handle.write(json.dumps(message) + "\n")
            handle.flush()
            os.fsync(handle.fileno())
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def persist_turn(store: SessionStore, tenant: str, size: int, turns: int) -> tuple[float, float]:
    """(seconds to load the session, median seconds to persist one turn)."""
    store.write(tenant, "bench", [message_record(m, "2026-11-22T00:00:00Z") for m in _messages(0, size)],
                {"updated_at": "2026-11-22T00:00:00Z", "window": []})
    manager = SessionManager(store, tenant=tenant)
    t0 = time.perf_counter()
    session = manager.get_or_create("bench")
    load = time.perf_counter() - t0
    times = []
    for turn in range(turns):
        for message in _messages(10**7 + 2 * turn, 2):
            session.append_message(message)
        t0 = time.perf_counter()
        manager.save(session)
        times.append(time.perf_counter() - t0)
    return load, statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,100000")
    parser.add_argument("--turns", type=int, default=30)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        stores = _stores(root)
        loads: dict[str, float] = {}
        print(f"{'history':>9} {'store':>9} {'persist a turn':>15} {'rewrite whole file':>19} {'ratio':>7}")
        for size in (int(s) for s in args.sizes.split(",")):
            baseline = rewrite_per_save(root, size, max(3, args.turns // 10 if size > 10_000 else args.turns))
            for name, store in stores.items():
                load, turn = persist_turn(store, f"t{size}-{os.getpid()}", size, args.turns)
                loads[name] = load
                print(f"{size:>9,} {name:>9} {turn * 1e3:>12.2f} ms {baseline * 1e3:>16.1f} ms {baseline / turn:>6.0f}x")
        print(f"\nloading a {max(int(s) for s in args.sizes.split(',')):,}-message session:")
        for name, seconds in loads.items():
            print(f"{name:>9}: {seconds:.2f} s")
        for store in stores.values():
            store.close()


if __name__ == "__main__":
    main()
