"""Dense history search: the per-query cost with the tenant's vectors kept up to date
(``DenseIndex.search_source``) against listing every message id per query (``DenseIndex.search``
over ``documents(tenant)``, the path before), on the JSONL store at 2,000 and 20,000 messages.

Run: ``PYTHONPATH=. python3 bench/bench_dense_history.py``. CPU time per query (median; the two
paths alternated in batches in one process), with ``OfflineEmbeddings`` when installed (else a
64-dimension hashing stand-in, named in the output); the lexical part is left out (the dense
ranking alone is timed).
"""

from __future__ import annotations

from pathlib import Path
import random
import statistics
import sys
import tempfile
import time
from typing import Any

from langchain_core.embeddings import Embeddings

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the checkout this bench lives in
from session_graph import DenseIndex, SessionManager
from session_graph.stores.jsonl import JsonlStore

WORDS = ["moving", "house", "sofa", "porto", "trip", "cat", "food", "tax", "return", "guitar", "lessons", "deploy",
         "friday", "coffee", "team", "editor"]


class Hashing(Embeddings):
    """A deterministic 64-dimension stand-in when the embeddings extra is missing."""

    def _vector(self, text: str) -> list[float]:
        rng = random.Random(text)
        return [rng.random() for _ in range(64)]

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [self._vector(t) for t in texts]

    def embed_query(self, text: str) -> list[float]:
        return self._vector(text)


def model() -> tuple[Any, str]:
    try:
        from session_graph.memory.embeddings import OfflineEmbeddings

        embeddings = OfflineEmbeddings()
        embeddings.embed_query("warm up")
        return embeddings, "OfflineEmbeddings (256 dims)"
    except Exception:
        return Hashing(), "a hashing stand-in (64 dims; the embeddings extra is not installed)"


def measure(total: int, embeddings: Any, rng: random.Random) -> dict[str, float]:
    """Median CPU ms per dense query by path, at ``total`` messages (paths alternated)."""
    manager = SessionManager(JsonlStore(tempfile.mkdtemp(prefix="bench_dense_")), tenant="alice")
    for number in range(total // 200):
        session = manager.get_or_create(f"s{number}")
        for _ in range(200):
            session.append_message({"role": "user", "content": " ".join(rng.choice(WORDS) for _ in range(8))})
        manager.save(session)
    source = manager.store.search_index  # type: ignore[attr-defined]
    kept, listed = DenseIndex(embeddings), DenseIndex(embeddings)

    def text_of(refs: list[Any]) -> dict[Any, str]:
        return {(h.key, h.seq): h.text for h in source.fetch("alice", refs, {})}

    paths = {
        "vectors kept up to date": lambda q: kept.search_source(q, source, "alice", 50),
        "every id listed per query": lambda q: listed.search(q, source.documents("alice"), 50, text_of, tenant="alice"),
    }
    for path in paths.values():
        path("warm up: embeds every message once")
    times: dict[str, list[float]] = {label: [] for label in paths}
    for batch in range(5):
        for label, path in paths.items():
            start = time.process_time()
            for query in range(10):
                path(f"{WORDS[(batch + query) % len(WORDS)]} {WORDS[query % 7]}")
            times[label].append((time.process_time() - start) / 10)
    return {label: statistics.median(t) * 1e3 for label, t in times.items()}


def main() -> None:
    embeddings, name = model()
    print(f"dense history search on the JSONL store, {name}; CPU ms per query, median of 5 alternated batches of 10")
    rng = random.Random(7)
    for total in (2_000, 20_000):
        medians = measure(total, embeddings, rng)
        print(f"  {total:,} messages: " + ", ".join(f"{label} {ms:.2f} ms" for label, ms in medians.items())
              + f"; listed / kept = {medians['every id listed per query'] / medians['vectors kept up to date']:.1f}x")


if __name__ == "__main__":
    main()
