"""The BM25 index searched between writes scores as a rebuilt one does (messages' Bm25Index and
memory's Bm25 over it), tombstones are compacted, and common terms are skipped only on request."""

from __future__ import annotations

import random

import pytest

from session_graph.memory.bm25 import Bm25
from session_graph.retrieval.bm25 import Bm25Index


def _rebuilt(live: dict[int, list[str]]) -> Bm25Index:
    index = Bm25Index()
    for key, words in live.items():
        index.add(key, words)
    return index


def test_searching_between_adds_and_removes_equals_a_rebuilt_index() -> None:
    rng = random.Random(3)
    vocab = [f"w{i}" for i in range(40)]
    index, live = Bm25Index(), {}
    for step in range(600):
        key = rng.randrange(150)
        if rng.random() < 0.25:
            index.remove(key)
            live.pop(key, None)
        else:
            live[key] = [rng.choice(vocab) for _ in range(rng.randint(1, 8))]
            index.add(key, live[key])
        if step % 37 == 0:
            query = rng.sample(vocab, 3)
            got, want = index.search(query, 10), _rebuilt(live).search(query, 10)
            assert [k for k, _ in got] == [k for k, _ in want]
            assert [s for _, s in got] == pytest.approx([s for _, s in want])
    assert index.stats() == _rebuilt(live).stats()


def test_common_terms_are_skipped_only_when_asked() -> None:
    index = Bm25Index()
    for i in range(20):
        index.add(i, ["item", f"n{i}"])
    index.add("rare", ["item", "rare"])
    assert len(index.search(["item"], 50)) == 21
    assert index.search(["item"], 50, common_from=10) == []  # in every document of a large-enough index
    assert [k for k, _ in index.search(["item", "rare"], 5, common_from=10)] == ["rare"]


def test_memory_bm25_compacts_an_often_updated_item() -> None:
    index = Bm25()
    index.add("other", "tea in the morning")
    for version in range(2000):
        index.add("theme", f"editor theme version {version}")
    assert index._index.ids < 600  # old versions' tombstones were dropped
    assert [k for k, _ in index.search("editor theme 1999")] == ["theme"]
    assert [k for k, _ in index.search("morning tea")] == ["other"]
    assert index.search("editor", among=["other"]) == [] and len(index) == 2


def test_memory_bm25_searches_while_another_thread_reindexes() -> None:
    import threading

    index, errors = Bm25(), []
    for i in range(300):
        index.add(f"k{i}", f"fact {i} about the editor theme")

    def write() -> None:
        for version in range(1500):
            index.add(f"k{version % 300}", f"fact {version} about the editor theme, revised")

    def read() -> None:
        try:
            for _ in range(300):
                assert len(index.search("editor theme fact", 5)) == 5
        except Exception as error:  # pragma: no cover - what the test looks for
            errors.append(error)

    threads = [threading.Thread(target=write), *(threading.Thread(target=read) for _ in range(2))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == [] and len(index) == 300
