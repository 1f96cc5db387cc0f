"""Retrieval for the prefilter and recall (issue 22): fusion that keeps a strong single-list
hit, the store's own vector index used, an indexed store whose abstract equals its content,
a failing store making a commit partial, and an index that follows other writers' changes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from langchain_core.embeddings import Embeddings
from langchain_core.language_models.fake_chat_models import FakeListChatModel
from langgraph.store.memory import InMemoryStore
from memory_util import active
import pytest

from session_graph import Session
from session_graph.memory import FileMemoryStore, MemoryConfig
from session_graph.memory.apply import apply_op
from session_graph.memory.bm25 import terms
from session_graph.memory.plan import create_plan
from session_graph.memory.prefilter import fuse, prefilter
from session_graph.memory.recall import recall

PREFS = ("user", "alice", "memories", "preferences")
CONCEPTS = [("seat", "aisle", "window"), ("flight", "flying", "flights", "plane"), ("coffee", "espresso", "latte")]


class Concepts(Embeddings):
    """A tiny embedding by concept (synonyms share an axis); counts the queries it embeds."""

    def __init__(self) -> None:
        self.queries = 0

    def _vector(self, text: str) -> list[float]:
        words = text.lower().replace(".", " ").replace(",", " ").split()
        return [float(sum(1 for w in words if any(w.startswith(c) for c in group))) + 0.01 for group in CONCEPTS]

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [self._vector(t) for t in texts]

    def embed_query(self, text: str) -> list[float]:
        self.queries += 1
        return self._vector(text)


def put(store: Any, content: str, key: str, ref: str) -> None:
    (op,) = create_plan([{"category": "preferences", "key": key, "abstract": content, "content": content}], [list(PREFS)])
    apply_op(store, op, ref, [], "2026-01-01T00:00:00Z")


def test_fusion_keeps_a_list_s_first_hit_in_the_top_five() -> None:
    lexical = [(f"d{i}", 10.0 - i) for i in range(8)]
    semantic = [("target", 0.99)] + [(f"d{i}", 0.5) for i in range(8)]
    assert "target" in [key for key, _ in fuse([lexical, semantic], 5)]


def test_fusion_by_score_and_by_reciprocal_rank() -> None:
    lexical, semantic = [("a", 9.0), ("b", 1.0)], [("b", 0.9), ("c", 0.8)]
    assert [key for key, _ in fuse([lexical, semantic], 3)] == ["b", "a", "c"]  # b: 1/9 + 1; a: 1; c: 0.89
    assert fuse([[("x", 1.0)], [("y", 1.0)]], 0) == []


def test_recall_ranks_every_category_on_one_scale() -> None:
    memory = MemoryConfig(store=InMemoryStore(), user="alice", agent="coder", embeddings=Concepts())
    for category, content in (("entities", "Orders coffee."), ("preferences", "Wants a window seat.")):
        namespace = memory.namespace(category)
        (op,) = create_plan([{"category": category, "key": category, "abstract": content, "content": content}], [list(namespace)])
        apply_op(memory.memory_store, op, f"{category}#0", [], "2026-01-01T00:00:00Z")
    # no shared word: only the embedding ranks them, and the seat is far nearer than the coffee;
    # each category's own best would tie (its first hit), and the tie went to "entities" first
    assert [value["content"] for value in recall(memory, "aisle please", k=1)] == ["Wants a window seat."]


@pytest.mark.parametrize("indexed", [False, True])
def test_a_synonym_only_the_embedding_finds_is_a_hit(indexed: bool) -> None:
    embeddings = Concepts()
    store = InMemoryStore(index={"dims": 3, "embed": embeddings, "fields": ["abstract", "content"]}) if indexed else InMemoryStore()
    put(store, "The user wants window seats on flights.", "seating", "a#0")
    for n in range(12):  # lexical distractors: they share the candidate's words
        put(store, f"The user wants the aisle printer number {n} when printing.", f"printer {n}", f"b#{n}")
    candidate = {"category": "preferences", "key": None, "abstract": "aisle seat", "content": "Aisle seat when flying."}
    (hits,) = prefilter(store, [candidate], [PREFS], embeddings=None if indexed else embeddings)
    assert "seating" in [hit["key"] for hit in hits.values()]
    before = embeddings.queries
    prefilter(store, [candidate], [PREFS], embeddings=None if indexed else embeddings)
    assert embeddings.queries == before + 1  # one query embedded per lookup (stored items not embedded again)


def test_an_indexed_store_commits_a_memory_whose_abstract_is_its_content() -> None:
    store = InMemoryStore(index={"dims": 3, "embed": Concepts(), "fields": ["abstract", "content"]})
    memory = MemoryConfig(store=store, user="alice", agent="coder")
    same = '{"memories": [{"category": "preferences", "key": "seat", "abstract": "Window seat.", "content": "Window seat."}]}'
    session = Session("s", model=FakeListChatModel(responses=["# Session Summary\n**Overview**: x", same]), memory=memory)
    session.append_message({"role": "user", "content": "window seat please"})
    assert session.commit()["status"] == "committed"
    assert recall(memory, "window seat")[0]["content"] == "Window seat."


class Failing(InMemoryStore):
    """An InMemoryStore whose searches fail while ``broken`` is set."""

    broken: bool = True

    def batch(self, ops: Any) -> Any:
        ops = list(ops)
        if self.broken and any(type(op).__name__ == "SearchOp" for op in ops):
            raise ConnectionError("store down")
        return super().batch(ops)


def test_a_failing_store_makes_the_commit_partial_and_the_next_one_finishes() -> None:
    store = Failing()
    memory = MemoryConfig(store=store, user="alice", agent="coder")
    reply = '{"memories": [{"category": "preferences", "key": "seat", "abstract": "Window seat", "content": "Window seat."}]}'
    session = Session("s", model=FakeListChatModel(responses=["# Session Summary\n**Overview**: x", reply]), memory=memory)
    session.append_message({"role": "user", "content": "window seat please"})
    result = session.commit()
    assert result["status"] == "partial" and "store down" in result["errors"][0]
    store.broken = False
    assert session.commit()["status"] == "committed"
    assert list(active(store, PREFS)) == ["seat"]


def test_the_index_follows_another_process_s_writes(tmp_path: Path) -> None:
    mine, theirs = FileMemoryStore(tmp_path, fsync=False), FileMemoryStore(tmp_path, fsync=False)  # two processes' views
    put(mine, "The user drinks espresso.", "coffee", "a#0")
    candidate = {"category": "preferences", "key": "coffee", "abstract": "oat latte", "content": "The user drinks oat latte."}
    assert prefilter(mine, [candidate], [PREFS])[0]["m1"]["content"] == "The user drinks espresso."
    update = {**create_plan([candidate], [list(PREFS)])[0], "op": "update", "targets": ["coffee"], "seen": {"coffee": 1}}
    assert apply_op(theirs, update, "b#0", [], "2026-01-02T00:00:00Z") == "updated"
    put(theirs, "The user drinks tea at night.", "tea", "c#0")
    (hits,) = prefilter(mine, [candidate], [PREFS])
    assert hits["m1"]["content"] == "The user drinks oat latte." and hits["m1"]["version"] == 2
    assert "tea" in [h["key"] for h in hits.values()]


def test_the_offline_embedding_loads_without_a_network_and_finds_a_synonym() -> None:
    pytest.importorskip("wordllama")
    from session_graph.memory.embeddings import OfflineEmbeddings

    embeddings = OfflineEmbeddings()
    store = InMemoryStore()
    put(store, "The user wants window seats on flights.", "seating", "a#0")
    for n in range(12):
        put(store, f"The user wants the aisle printer number {n} when printing.", f"printer {n}", f"b#{n}")
    candidate = {"category": "preferences", "key": None, "abstract": "aisle seat", "content": "Aisle seat when flying."}
    (hits,) = prefilter(store, [candidate], [PREFS], embeddings=embeddings)
    assert "seating" in [hit["key"] for hit in hits.values()]
    assert len(embeddings.embed_query("hello")) == 256


def _distractors(store: Any) -> None:
    for n, topic in enumerate(["billing", "search", "auth", "payments", "gateway", "storage", "queue", "ledger"]):
        put(store, f"The user keeps the {topic} service on call rotation.", f"service {n}", f"d{n}")


@pytest.mark.parametrize(("stored", "probe"), [
    ("The user is allergic to peanuts.", "Cannot eat them: allergy."),
    ("The user commutes by bicycle.", "Cycles to the office."),
    ("The user prefers tabs for indentation.", "Four spaces for indenting now."),
])
def test_a_morphological_variant_the_stemmer_misses_is_a_hit(stored: str, probe: str) -> None:
    store = InMemoryStore()
    _distractors(store)
    put(store, stored, "target topic", "t")
    assert not set(terms(stored)) & set(terms(probe)) - {"target", "topic"}  # no shared word stem: only grams meet
    (hits,) = prefilter(store, [{"category": "preferences", "key": None, "abstract": probe, "content": probe}], [PREFS])
    assert "target_topic" in [h["key"] for h in hits.values()]


def test_the_candidate_s_own_merge_key_is_evidence() -> None:
    store = InMemoryStore()
    _distractors(store)
    put(store, "The user owns a ThinkPad X1.", "laptop model", "t")
    probe = "Works on a Lenovo notebook."  # nothing shared with the stored text
    without, with_key = prefilter(store, [{"category": "preferences", "key": None, "abstract": probe, "content": probe},
                                          {"category": "preferences", "key": "laptop", "abstract": probe, "content": probe}],
                                  [PREFS, PREFS])
    assert "laptop_model" not in [h["key"] for h in without.values()]
    assert "laptop_model" in [h["key"] for h in with_key.values()]


@pytest.mark.parametrize("where", ["per category", "under the owner"])
def test_the_change_feed_lives_outside_the_user_s_prefix_and_an_old_feed_is_read_then_moved(where: str) -> None:
    from session_graph.memory.changes import _legacy_locations, changed_since, feed_location

    store = InMemoryStore()
    put(store, "The user's editor theme is dark.", "editor theme", "a")
    listed = store.search(("user", "alice"), limit=100)
    assert [(i.namespace, i.key) for i in listed] == [(PREFS, "editor_theme")]  # memories only, no bookkeeping
    assert store.get(*feed_location(PREFS)) is not None and feed_location(PREFS)[0][0] == "memory_changes"
    owner = {feed_location((*PREFS[:3], category))[0] for category in ("profile", "preferences", "events")}
    assert owner == {("memory_changes", "user", "alice")}  # one namespace per owner: one query for all its feeds

    old = InMemoryStore()  # a store written before: the same items, the feed where it was kept then
    for item in listed:
        old.put(item.namespace, item.key, item.value, index=False)
    place = _legacy_locations(PREFS)[0 if where == "per category" else 1]
    old.put(*place, store.get(*feed_location(PREFS)).value, index=False)
    assert changed_since(old, PREFS, 0) == (1, ["editor_theme"])  # read where it was
    (hits,) = prefilter(old, [{"category": "preferences", "key": "editor theme", "abstract": "x", "content": "light"}], [PREFS])
    assert [h["key"] for h in hits.values()] == ["editor_theme"]
    put(old, "The user runs pytest.", "test runner", "b")
    assert old.get(*place) is None and old.get(*feed_location(PREFS)) is not None  # moved by the next write
    assert changed_since(old, PREFS, 1) == (2, ["test_runner"])  # its counter going on
    (hits,) = prefilter(old, [{"category": "preferences", "key": "test runner", "abstract": "x", "content": "nox"}], [PREFS])
    assert "test_runner" in [h["key"] for h in hits.values()]  # the reader followed the feed across the move


def test_the_key_catalogue_lists_the_newest_first_and_reads_only_what_fits() -> None:
    from session_graph.memory.prefilter import key_catalogue

    store = InMemoryStore()
    entities = ("user", "alice", "memories", "entities")

    def write(namespace: tuple[str, ...], key: str, text: str, minute: int, op: str = "create") -> None:
        (planned,) = create_plan([{"category": namespace[3], "key": key, "abstract": text, "content": text}], [list(namespace)])
        planned = {**planned, "op": "update", "targets": [planned["key"]]} if op == "update" else planned
        apply_op(store, planned, f"{key}@{minute}", [], f"2026-01-01T{minute // 60:02d}:{minute % 60:02d}:00Z")

    for n in range(300):
        write(PREFS, f"pref {n}", f"Preference number {n}.", n)
    write(entities, "laptop", "ThinkPad X1", 400)
    write(PREFS, "pref 5", "Preference number 5, changed.", 500, "update")  # rewritten: the newest of all
    lines = key_catalogue(store, [PREFS, entities], max_chars=120)
    assert lines[:3] == ['"preferences/pref_5": "Preference number 5, changed."', '"entities/laptop": "ThinkPad X1"',
                         '"preferences/pref_299": "Preference number 299."'][: len(lines)]
    assert len(lines) >= 2 and sum(len(line) + 1 for line in lines) <= 120
    fresh = InMemoryStore()  # an index built by listing the store keeps the same order
    for item in [*store.search(PREFS, limit=1000), *store.search(entities, limit=10)]:
        fresh.put(item.namespace, item.key, item.value, index=False)
    assert key_catalogue(fresh, [PREFS, entities], max_chars=120) == lines


def test_recall_finds_a_morphological_variant_too() -> None:
    memory = MemoryConfig(store=InMemoryStore(), user="alice", agent="coder")
    _distractors(memory.memory_store)
    put(memory.memory_store, "The user is allergic to peanuts.", "food", "t")
    assert [v["key"] for v in recall(memory, "any allergy?", 3)][:1] == ["food"]


def test_the_profile_is_always_a_hit_of_a_profile_candidate() -> None:
    store = InMemoryStore()
    profile = ("user", "alice", "memories", "profile")
    (op,) = create_plan([{"category": "profile", "key": None, "abstract": "Alice", "content": "- Works as a nurse in Lyon."}],
                        [list(profile)])
    apply_op(store, op, "p", [], "2026-01-01T00:00:00Z")
    candidate = {"category": "profile", "key": "hobby", "abstract": "climbs", "content": "- Goes bouldering on weekends."}
    (hits,) = prefilter(store, [candidate], [profile])  # no word in common: the one profile item is still shown
    assert [(h["key"], h["kind"]) for h in hits.values()] == [("profile", "key")]
