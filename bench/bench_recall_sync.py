"""Per-query cost of bringing the JSONL search index up to date, on a tenant with many sessions.

Times (CPU time of this process, p50 and p90 over the queries) one ranked ``SessionManager.search``
on an unchanged tenant of ``--sessions`` sessions x 4 messages, two ways, in alternated batches:
  A  the change marker on (the tenant folder's mtime: one stat per query when nothing changed)
  B  baseline: a full listing of the folder and a stat per session on every query (the marker off)
Both keep the in-memory index; ``_FRESH`` is 0 so every query checks the files (no reuse of a
check made a moment ago). Run: ``python3 bench/bench_recall_sync.py --sessions 5000``.
"""

from __future__ import annotations

import argparse
from pathlib import Path
import statistics
import tempfile
import time

from session_graph import SessionManager
from session_graph.stores import JsonlStore, search_index, search_marker


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sessions", type=int, default=5000)
    parser.add_argument("--queries", type=int, default=60)
    parser.add_argument("--batch", type=int, default=10)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        manager = SessionManager(JsonlStore(Path(folder)), tenant="t")
        for i in range(args.sessions):
            session = manager.get_or_create(f"s{i}")
            for turn in range(2):
                session.append_message({"role": "user", "content": f"session {i} asks about invoice {turn} for project {i % 97}"})
                session.append_message({"role": "assistant", "content": f"the invoice {turn} of project {i % 97} is paid"})
            manager.save(session)
        manager.search("invoice", 5)  # load the index once
        time.sleep(search_marker.RACY + 0.1)  # the folder's mtime old enough to trust
        search_index._FRESH = 0.0
        rescan = search_marker.RESCAN
        times: dict[str, list[float]] = {"A marker": [], "B full scan": []}
        for start in range(0, args.queries, args.batch):
            for label, every in (("A marker", rescan), ("B full scan", 0.0)) if start % (2 * args.batch) == 0 else \
                    (("B full scan", 0.0), ("A marker", rescan)):
                search_marker.RESCAN = every
                for q in range(start, min(start + args.batch, args.queries)):
                    began = time.process_time()
                    manager.search(f"invoice project {q % 97}", 5)
                    times[label].append(time.process_time() - began)
        search_marker.RESCAN = rescan
    a, b = times["A marker"], times["B full scan"]
    for label, values in times.items():
        values = sorted(values)
        print(f"{label}: one ranked search, {args.sessions} sessions x 4 messages, CPU p50 {statistics.median(values) * 1e3:.2f} ms, "
              f"p90 {values[int(len(values) * 0.9)] * 1e3:.2f} ms ({len(values)} queries)")
    print(f"ratio B/A (p50): {statistics.median(b) / max(statistics.median(a), 1e-9):.1f}x")


if __name__ == "__main__":
    main()
