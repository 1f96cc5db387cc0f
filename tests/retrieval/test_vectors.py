"""VectorIndex (issue 22): vectors kept in place by key (a changed item re-embedded alone, a
removed one's row reused, nothing rebuilt), exact search while small, an inverted file above
``exact_up_to`` that finds what the exact search finds on clustered data, and the prefilter
embedding only what the change feed says changed."""

from __future__ import annotations

import math
import random

from langchain_core.embeddings import Embeddings
from langgraph.store.memory import InMemoryStore
import numpy as np
import pytest

from session_graph.errors import ConfigurationError
from session_graph.memory.apply import apply_op
from session_graph.memory.plan import create_plan
from session_graph.memory.prefilter import prefilter
from session_graph.retrieval.vectors import VectorIndex

AXES = ["coffee", "seat", "theme", "laptop", "city", "dog", "tests", "team"]


class Axes(Embeddings):
    """One axis per word of ``AXES`` (plus a little of a hash, so texts differ); counts texts embedded."""

    def __init__(self) -> None:
        self.embedded: list[str] = []

    def _vector(self, text: str) -> list[float]:
        rng = random.Random(text)
        return [float(text.count(word)) + rng.random() * 0.05 for word in AXES]

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        self.embedded += texts
        return [self._vector(t) for t in texts]

    def embed_query(self, text: str) -> list[float]:
        return self._vector(text)


def test_a_changed_key_is_re_embedded_alone_and_a_removed_row_is_reused() -> None:
    model = Axes()
    index = VectorIndex(model)
    for n, word in enumerate(AXES):
        index.set(n, f"about {word}", tag="v1")
    assert index.search("coffee", 1)[0][0] == 0 and len(model.embedded) == 8
    index.set(0, "about coffee", tag="v1")  # the same version: nothing to do
    index.set(1, "about city now", tag="v2")
    assert [k for k, _ in index.search("city", 2)] in ([1, 4], [4, 1]) and model.embedded[8:] == ["about city now"]
    capacity = index._matrix.shape[0]
    index.remove(2)
    index.set("new", "about dog and theme")
    index.search("dog", 3)
    assert index._matrix.shape[0] == capacity and index._row["new"] == 2  # the freed row, in place
    assert 2 not in index and "new" in index and len(index) == 8


def test_the_inverted_file_finds_what_the_exact_search_finds() -> None:
    rng = random.Random(4)
    texts = {n: " ".join(rng.choice(AXES) for _ in range(3)) for n in range(600)}
    exact, approximate = VectorIndex(Axes()), VectorIndex(Axes(), exact_up_to=100, probes=6)
    for n, text in texts.items():
        exact.set(n, text)
        approximate.set(n, text)
    for query in ("coffee", "seat seat theme", "dog team", "laptop city"):
        want = [score for _, score in exact.search(query, 10)]  # many texts tie: compare how near, rank by rank
        got = [score for _, score in approximate.search(query, 10)]
        assert len(got) == 10 and all(g >= w - 0.02 for g, w in zip(got, want, strict=True))
    assert approximate._centroids is not None and exact._centroids is None
    for n in range(0, 600, 2):  # removals leave their lists at once; new vectors join theirs
        approximate.remove(n)
    approximate.set("late", "coffee coffee coffee coffee seat")
    assert approximate.search("coffee coffee coffee coffee seat", 1)[0][0] == "late"
    listed = sorted(int(r) for members, size in zip(approximate._lists, approximate._sizes, strict=True) for r in members[:size])
    assert listed == sorted(approximate._row.values())


def test_vectors_of_another_size_are_refused() -> None:
    class Wide(Axes):
        def embed_documents(self, texts: list[str]) -> list[list[float]]:
            return [[*self._vector(t), 1.0] for t in texts]

    index = VectorIndex(Axes())
    index.set(1, "coffee")
    index.search("coffee", 1)
    index.embeddings = Wide()
    index.set(2, "seat")
    with pytest.raises(ConfigurationError, match="another size"):
        index.search("seat", 1)
    with pytest.raises(ConfigurationError, match="Embeddings"):
        VectorIndex(object())


def test_the_prefilter_embeds_only_what_changed() -> None:
    store, model = InMemoryStore(), Axes()
    namespace = ("user", "alice", "memories", "preferences")

    def write(key: str, text: str, op: str = "create") -> None:
        (planned,) = create_plan([{"category": "preferences", "key": key, "abstract": text, "content": text}], [list(namespace)])
        apply_op(store, {**planned, "op": op, "targets": [planned["key"]]} if op == "update" else planned, f"{key}/{text}", [],
                 "2026-01-01T00:00:00Z")

    for n, word in enumerate(AXES):
        write(f"item {n}", f"The user talks about {word}.")
    probe = {"category": "preferences", "key": None, "abstract": "seat", "content": "window seat"}
    prefilter(store, [probe], [namespace], embeddings=model)
    assert len(model.embedded) == 8
    prefilter(store, [probe], [namespace], embeddings=model)
    assert len(model.embedded) == 8  # nothing changed: nothing embedded
    write("item 3", "The user talks about a new laptop.", "update")
    (hits,) = prefilter(store, [{**probe, "content": "new laptop"}], [namespace], embeddings=model)
    assert len(model.embedded) == 9 and "new laptop" in model.embedded[-1]
    assert any(h["key"] == "item_3" for h in hits.values())
    assert np.isfinite(VectorIndex(model).search("x", 3) or [0.0]).all()  # an empty index answers nothing


class Mixed(Axes):
    """``Axes`` spread over 64 dimensions by a fixed mixing: wide vectors whose energy lies in
    8 directions, so the inverted file's lists hold them projected."""

    def __init__(self) -> None:
        super().__init__()
        self.mix = np.random.default_rng(3).standard_normal((len(AXES), 64))

    def _vector(self, text: str) -> list[float]:
        return (np.asarray(super()._vector(text)) @ self.mix).tolist()


def test_a_projected_inverted_file_returns_exact_cosines_of_what_the_exact_search_finds() -> None:
    rng = random.Random(5)
    texts = {n: " ".join(rng.choice(AXES) for _ in range(3)) for n in range(600)}
    exact, approximate = VectorIndex(Mixed()), VectorIndex(Mixed(), exact_up_to=100, probes=12)
    for n, text in texts.items():
        exact.set(n, text)
        approximate.set(n, text)
    for query in ("coffee", "seat seat theme", "dog team", "laptop city"):
        want, got = exact.search(query, 10), approximate.search(query, 10)
        assert len(got) == 10 and all(g >= w - 0.02 for (_, g), (_, w) in zip(got, want, strict=True))
        truth = dict(exact.search(query, 600))
        assert all(abs(score - truth[key]) < 1e-5 for key, score in got)  # re-ranked by the whole vectors
    assert approximate._projection is not None and approximate._projection.shape[0] < 64
    blocks = [block[:size] for block, size in zip(approximate._blocks, approximate._sizes, strict=True)]
    assert all(block.flags.c_contiguous and block.dtype == np.float32 for block in blocks)
    approximate.remove(7)
    approximate.set("late", "coffee coffee coffee coffee seat")  # joins its list, projected
    assert approximate.search("coffee coffee coffee coffee seat", 1)[0][0] == "late"
    assert 7 not in {key for key, _ in approximate.search("coffee", 600)}


class Flaky(Axes):
    """Axes, but the texts in ``bad`` embed to NaN (a broken model or a bad input), and ``wide`` adds a dimension to queries."""

    def __init__(self, bad: set[str]) -> None:
        super().__init__()
        self.bad, self.wide = bad, False

    def _vector(self, text: str) -> list[float]:
        vector = [math.nan] * len(AXES) if text in self.bad else super()._vector(text)
        return [*vector, 1.0] if self.wide else vector

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [self._vector(t) for t in texts]


def test_a_nan_embedding_never_breaks_a_search_nor_ranks() -> None:
    rng = random.Random(7)
    model = Flaky({"broken text"})
    small, large = VectorIndex(model), VectorIndex(model, exact_up_to=50, probes=4)
    for index in (small, large):
        for n in range(200):
            index.set(n, " ".join(rng.choice(AXES) for _ in range(3)))
        index.set("bad", "broken text")
        found = index.search("coffee", 5)  # the large one trains its lists: a NaN row made eigh fail, every search after
        assert len(found) == 5 and all(key != "bad" and math.isfinite(score) for key, score in found)
        assert index.search("broken text", 5) == []  # a NaN query matches nothing (no NaN scores)


def test_a_query_of_another_size_is_refused_clearly() -> None:
    model = Flaky(set())
    index = VectorIndex(model)
    index.set(1, "coffee")
    index.search("coffee", 1)
    model.wide = True  # the model was swapped: its query vectors have another width than those held
    with pytest.raises(ConfigurationError, match="another size"):
        index.search("coffee", 1)


def test_scores_are_cosines_within_one_despite_float32_rounding() -> None:
    rng = random.Random(11)
    texts = {n: " ".join(rng.choice(AXES) for _ in range(4)) for n in range(300)}
    for index in (VectorIndex(Axes()), VectorIndex(Axes(), exact_up_to=50, probes=4)):
        for n, text in texts.items():
            index.set(n, text)
        scores = [score for text in list(texts.values())[:40] for _, score in index.search(text, 3)]
        assert scores and all(0.0 < score <= 1.0 for score in scores), max(scores)  # the text itself: 1.0, never 1.0000001


def test_a_memory_whose_abstract_changed_with_the_same_content_is_embedded_again() -> None:
    from session_graph.memory.prefilter import NamespaceIndex, nearest

    model = Axes()
    index = NamespaceIndex()
    item = {"status": "active", "key": "pref", "abstract": "likes coffee", "content": "- team lunch on fridays", "hash": "h1"}
    index.set("pref", item)
    assert nearest(index, "coffee", 5, model, None, None)[0][0] == "pref"
    index.set("pref", {**item, "abstract": "likes a window seat"})  # an UPDATE that rewrote the abstract, not the content
    assert nearest(index, "seat", 5, model, None, None)[0][1] > 0.5
    assert any("window seat" in text for text in model.embedded)  # its vector is of the text searched now


def test_a_refresh_while_the_vectors_are_first_filled_is_not_overwritten(monkeypatch: pytest.MonkeyPatch) -> None:
    import threading

    from session_graph.memory import prefilter as prefilter_module
    from session_graph.memory.changes import bump
    from session_graph.memory.prefilter import indexes, nearest, vector_tag

    store, namespace = InMemoryStore(), ("user", "alice", "memories", "preferences")
    for key, text in (("drink", "likes coffee"), ("seat", "likes an aisle seat")):
        store.put(namespace, key, {"status": "active", "key": key, "abstract": text, "content": text, "hash": text})
        bump(store, namespace, key)
    index = indexes(store, [namespace])[0]
    newer = {"status": "active", "key": "seat", "abstract": "likes a window seat", "content": "likes a window seat", "hash": "w"}
    writer: list[threading.Thread] = []
    real = prefilter_module.searchable_text

    def filling(value: dict) -> str:  # another thread writes and refreshes while this one fills the vectors
        if not writer:
            def write() -> None:
                store.put(namespace, "seat", newer)
                bump(store, namespace, "seat")
                indexes(store, [namespace])
            writer.append(threading.Thread(target=write))
            writer[0].start()
            writer[0].join(0.5)  # it finishes now, or (the fill under the index lock) waits for the fill
        return real(value)

    monkeypatch.setattr(prefilter_module, "searchable_text", filling)
    nearest(index, "seat", 5, Axes(), None, None)
    writer[0].join()
    assert index.values["seat"] is not None and index.dense is not None
    assert index.dense.holds("seat", vector_tag(newer))  # not the older value the fill had copied
