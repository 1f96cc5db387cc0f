"""Recall over all history: quality against rank_bm25, indexing cost, query latency by size.

Run: ``python bench/bench_recall.py`` (``--quick`` skips the 100,000-message size; set
``SESSION_GRAPH_PG_DSN`` to include Postgres; ``pip install 'session_graph[bench]'`` for
rank_bm25). Everything goes through the public API (``SessionManager.save``, ``.search``,
``.search_sessions``) on a generated benchmark (``bench/recall_data.py``: facts planted across
dozens of sessions of small talk, asked later in other words; dates, updates, multi-hop,
distractors, Chinese; fixed seed). No model is called.

1. Quality, for ours (each store) and for rank_bm25's BM25Okapi over the same turns in the
   same run (whitespace tokens, as its README shows; and with our terms, to separate the
   tokenizer from the index): evidence-turn recall@5 and @10 (the share of a question's
   evidence turns among the first 5 / 10 hits), evidence-session recall@5 (the share of its
   evidence sessions among the first 5 distinct sessions of the ranked hits; "aggregated":
   ``search_sessions``, which scores sessions from their best hits), per question type.
2. Indexing cost: CPU and wall time of ``save`` (one user/assistant turn, fsync on) with the
   index against the same store with its index hook switched off, batches alternated; and
   the index's own time per message.
3. Query time: CPU and wall p50/p95 of ``SessionManager.search(q, k=10)`` at 1k, 10k and
   100k stored messages per store, and rank_bm25's ``get_top_n`` at the same sizes.
"""

from __future__ import annotations

import argparse
from collections import defaultdict
import contextlib
import os
from pathlib import Path
import statistics
import sys
import tempfile
import time
from typing import Any
import uuid

sys.path.insert(0, str(Path(__file__).parent))

from recall_data import Benchmark, generate

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the checkout this bench lives in, not an installed copy
from session_graph import SessionManager
from session_graph.retrieval.tokenize import terms
from session_graph.stores import JsonlStore, PostgresStore, SqliteStore

RUN = uuid.uuid4().hex[:8]  # tenants of this run: a Postgres database outlives it


def _clean(manager: SessionManager) -> None:
    """Delete what a run stored (the files go with the temporary directory; Postgres keeps rows)."""
    if isinstance(manager.store, PostgresStore):
        for info in manager.list_sessions():
            manager.delete(info.key)


def _stores(root: Path, name: str) -> dict[str, Any]:
    stores: dict[str, Any] = {"jsonl": JsonlStore(root / f"{name}-jsonl"), "sqlite": SqliteStore(root / f"{name}.sqlite3")}
    if os.environ.get("SESSION_GRAPH_PG_DSN"):
        stores["postgres"] = PostgresStore(os.environ["SESSION_GRAPH_PG_DSN"])
    return stores


def _load(manager: SessionManager, bench: Benchmark) -> float:
    """Save every session (one save each); returns the wall seconds."""
    started = time.perf_counter()
    for key, talk in bench.sessions.items():
        session = manager.get_or_create(key)
        for role, text in talk:
            session.append_message({"role": role, "content": text})
        manager.save(session)
        manager.evict(key) if hasattr(manager, "evict") else None
    return time.perf_counter() - started


def _distinct(keys: list[str], n: int) -> list[str]:
    out: list[str] = []
    for key in keys:
        if key not in out:
            out.append(key)
        if len(out) == n:
            break
    return out


class _Baseline:
    """rank_bm25's BM25Okapi over the same turns."""

    def __init__(self, bench: Benchmark, tokenize: Any) -> None:
        from rank_bm25 import BM25Okapi

        self.refs = [(key, seq) for key, talk in bench.sessions.items() for seq in range(len(talk))]
        self.tokenize = tokenize
        started = time.process_time()
        self.bm25 = BM25Okapi([tokenize(text) for talk in bench.sessions.values() for _, text in talk])
        self.build_cpu = time.process_time() - started

    def ranked(self, question: str, n: int) -> list[tuple[str, int]]:
        scores = self.bm25.get_scores(self.tokenize(question))
        order = sorted(range(len(scores)), key=lambda i: -scores[i])[:n]
        return [self.refs[i] for i in order]


def _whitespace(text: str) -> list[str]:
    return text.lower().split()


def quality(bench: Benchmark, root: Path, with_baseline: bool) -> None:
    print(f"\n== Quality: {len(bench.sessions)} sessions, {bench.messages} messages, {len(bench.questions)} questions "
          f"({', '.join(f'{k} {v}' for k, v in sorted(_count(bench).items()))}) ==")
    systems: dict[str, Any] = {}
    for name, store in _stores(root, "quality").items():
        manager = SessionManager(store, tenant=f"bench-{RUN}")
        _load(manager, bench)
        systems[f"ours ({name})"] = manager
    if with_baseline:
        systems["rank_bm25 (whitespace)"] = _Baseline(bench, _whitespace)
        systems["rank_bm25 (our terms)"] = _Baseline(bench, terms)
    header = f"{'system':<26}{'type':<12}{'turn@5':>8}{'turn@10':>9}{'sess@5':>8}{'sess@5 aggr':>12}"
    print(header)
    for name, system in systems.items():
        per: dict[str, list[tuple[float, float, float, float]]] = defaultdict(list)
        for question in bench.questions:
            if isinstance(system, SessionManager):
                hits = system.search(question.text, k=50)
                ranked = [(h.key, h.seq) for h in hits]
                aggregated = [key for key, _ in system.search_sessions(question.text, k=5)]
            else:
                ranked = system.ranked(question.text, 50)
                aggregated = []
            evidence = set(question.evidence)
            sessions = {key for key, _ in evidence}
            first = _distinct([key for key, _ in ranked], 5)
            row = (len(evidence & set(ranked[:5])) / len(evidence), len(evidence & set(ranked[:10])) / len(evidence),
                   len(sessions & set(first)) / len(sessions),
                   len(sessions & set(aggregated)) / len(sessions) if aggregated else float("nan"))
            per[question.kind].append(row)
            per["all"].append(row)
        for kind in [*sorted(k for k in per if k != "all"), "all"]:
            rows = per[kind]
            means = [statistics.fmean(r[i] for r in rows) for i in range(4)]
            aggr = "-" if means[3] != means[3] else f"{means[3]:.3f}"
            print(f"{name:<26}{kind:<12}{means[0]:>8.3f}{means[1]:>9.3f}{means[2]:>8.3f}{aggr:>12}")
    for system in systems.values():
        if isinstance(system, SessionManager):
            _clean(system)
            system.close()


def _count(bench: Benchmark) -> dict[str, int]:
    counts: dict[str, int] = defaultdict(int)
    for question in bench.questions:
        counts[question.kind] += 1
    return counts


@contextlib.contextmanager
def _index_off(store: Any) -> Any:
    """The store with its search-index hook switched off (the baseline of the indexing cost)."""
    if isinstance(store, JsonlStore):
        hook = store.search_index.appended
        store.search_index.appended = lambda *a, **k: None  # type: ignore[method-assign]
        try:
            yield
        finally:
            store.search_index.appended = hook  # type: ignore[method-assign]
        return
    from session_graph.stores import search_sql

    original = search_sql.SqlSearch.insert_flow

    def nothing(self: Any, *args: Any) -> Any:
        return
        yield

    search_sql.SqlSearch.insert_flow = nothing  # type: ignore[method-assign]
    try:
        yield
    finally:
        search_sql.SqlSearch.insert_flow = original  # type: ignore[method-assign]


def append_cost(root: Path, rounds: int, batch: int) -> None:
    print(f"\n== Append cost: save() of one turn (2 messages, fsync on) into a 2,000-message session; "
          f"{rounds} alternated batches of {batch} saves each ==")
    print(f"{'store':<10}{'CPU ms/save idx':>16}{'no idx':>9}{'ratio':>7}{'wall ms/save idx':>18}{'no idx':>9}{'ratio':>7}")
    bench = generate(sessions=1, turns=1000, seed=3)
    talk = next(iter(bench.sessions.values()))
    for name, store in _stores(root, "append").items():
        manager = SessionManager(store, tenant=f"append-{RUN}")
        session = manager.get_or_create("s")
        for role, text in talk:
            session.append_message({"role": role, "content": text})
        manager.save(session)
        times: dict[bool, list[tuple[float, float]]] = {True: [], False: []}
        position = 0
        for round_ in range(rounds * 2):
            indexed = round_ % 2 == 0
            with contextlib.nullcontext() if indexed else _index_off(store):
                for _ in range(batch):
                    user, reply = talk[position % len(talk)], talk[(position + 1) % len(talk)]
                    position += 2
                    session.append_message({"role": "user", "content": user[1]})
                    session.append_message({"role": "assistant", "content": reply[1]})
                    cpu, wall = time.process_time(), time.perf_counter()
                    manager.save(session)
                    times[indexed].append((time.process_time() - cpu, time.perf_counter() - wall))
        on = [statistics.fmean(t[i] for t in times[True]) * 1000 for i in range(2)]
        off = [statistics.fmean(t[i] for t in times[False]) * 1000 for i in range(2)]
        print(f"{name:<10}{on[0]:>16.3f}{off[0]:>9.3f}{on[0] / off[0]:>7.2f}{on[1]:>18.3f}{off[1]:>9.3f}{on[1] / off[1]:>7.2f}")
        _clean(manager)
        manager.close()
    started, count = time.process_time(), 0
    for _, text in talk:
        terms(text)
        count += 1
    print(f"the index's own work (terms of a message): {(time.process_time() - started) / count * 1e6:.1f} us CPU per message")


def latency(root: Path, sizes: list[int], queries: int, with_baseline: bool) -> None:
    print(f"\n== Query time: SessionManager.search(q, k=10) over all the tenant's sessions; {queries} questions; "
          "CPU and wall ms ==")
    print(f"{'store':<24}{'messages':>9}{'load s':>8}{'first q ms':>11}{'CPU p50':>9}{'CPU p95':>9}{'wall p50':>9}{'wall p95':>9}")
    for size in sizes:
        sessions = max(5, size // 200)
        bench = generate(sessions=sessions, turns=size // sessions // 2, seed=11)
        asked = [q.text for q in bench.questions][:queries] or ["where do I work now"]
        while len(asked) < queries:
            asked += asked[: queries - len(asked)]
        for name, store in _stores(root, f"size{size}").items():
            manager = SessionManager(store, tenant=f"size{size}-{RUN}")
            load = _load(manager, bench)
            manager.close()
            reopened = SessionManager(_reopen(store), tenant=f"size{size}-{RUN}")  # a new process's view: nothing in memory
            wall = time.perf_counter()
            reopened.search(asked[0], k=10)  # JSONL: reads the terms files into memory once
            first = (time.perf_counter() - wall) * 1000
            cpu_times, wall_times = [], []
            for question in asked:
                cpu, wall = time.process_time(), time.perf_counter()
                reopened.search(question, k=10)
                cpu_times.append((time.process_time() - cpu) * 1000)
                wall_times.append((time.perf_counter() - wall) * 1000)
            print(f"{'ours (' + name + ')':<24}{bench.messages:>9}{load:>8.1f}{first:>11.1f}{_p(cpu_times, 50):>9.2f}"
                  f"{_p(cpu_times, 95):>9.2f}{_p(wall_times, 50):>9.2f}{_p(wall_times, 95):>9.2f}")
            _clean(reopened)
            reopened.close()
        if with_baseline:
            baseline = _Baseline(bench, _whitespace)
            few = asked[: max(5, queries // (10 if size >= 100_000 else 1))]
            cpu_times, wall_times = [], []
            for question in few:
                cpu, wall = time.process_time(), time.perf_counter()
                baseline.bm25.get_top_n(_whitespace(question), baseline.refs, n=10)
                cpu_times.append((time.process_time() - cpu) * 1000)
                wall_times.append((time.perf_counter() - wall) * 1000)
            print(f"{'rank_bm25 get_top_n':<24}{bench.messages:>9}{baseline.build_cpu:>8.1f}{'-':>11}{_p(cpu_times, 50):>9.2f}"
                  f"{_p(cpu_times, 95):>9.2f}{_p(wall_times, 50):>9.2f}{_p(wall_times, 95):>9.2f}")


def _reopen(store: Any) -> Any:
    if isinstance(store, JsonlStore):
        return JsonlStore(store.root)
    if isinstance(store, SqliteStore):
        return SqliteStore(store._where)
    return PostgresStore(os.environ["SESSION_GRAPH_PG_DSN"])


def _p(values: list[float], q: int) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q / 100 * (len(ordered) - 1)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sessions", type=int, default=80)
    parser.add_argument("--turns", type=int, default=30, help="user/assistant turns per session")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--quick", action="store_true", help="skip the 100,000-message size")
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--batch", type=int, default=20)
    parser.add_argument("--only", choices=["quality", "append", "latency"], default=None)
    args = parser.parse_args()
    try:
        import rank_bm25  # noqa: F401

        with_baseline = True
    except ImportError:
        print("rank_bm25 is not installed (pip install 'session_graph[bench]'): the baseline rows are left out")
        with_baseline = False
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        if args.only in (None, "quality"):
            quality(generate(args.sessions, args.turns, args.seed), root, with_baseline)
        if args.only in (None, "append"):
            append_cost(root, args.rounds, args.batch)
        if args.only in (None, "latency"):
            latency(root, [1_000, 10_000] + ([] if args.quick else [100_000]), args.queries, with_baseline)


if __name__ == "__main__":
    main()
