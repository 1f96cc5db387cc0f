"""One reply's candidates are handled in linear time (issue 22): candidates of a batch that share
a key or a text are each shown the newest few earlier ones (``BATCH_HITS``), not every earlier
one, so n candidates on one topic make O(n) hits and prompt lines, not O(n^2); and each
namespace's index is brought up to date once per batch, not once per candidate."""

from __future__ import annotations

from typing import Any

from langgraph.store.memory import InMemoryStore

from session_graph.memory import prefilter as prefilter_module
from session_graph.memory.categories import memory_namespace
from session_graph.memory.prefilter import BATCH_HITS, prefilter

PREFS = memory_namespace("preferences", "alice", "coder")


def test_candidates_sharing_a_key_are_each_shown_the_newest_few_earlier_ones() -> None:
    many = [{"category": "preferences", "key": "theme", "abstract": f"theme {i}", "content": f"Theme number {i}."}
            for i in range(200)]
    hits = prefilter(InMemoryStore(), many, [PREFS] * len(many))
    assert hits[0] == {} and list(hits[1]) == ["c0"]
    assert list(hits[-1]) == [f"c{n}" for n in range(199 - BATCH_HITS, 199)]
    assert sum(len(h) for h in hits) <= BATCH_HITS * len(many)


def test_same_text_under_two_keys_still_sees_its_twin() -> None:
    text = "The user prefers dark mode."
    batch = [{"category": "preferences", "key": f"k{i}", "abstract": "x", "content": f"Other fact {i}."} for i in range(10)]
    batch.insert(0, {"category": "preferences", "key": "theme", "abstract": "dark", "content": text})
    batch.append({"category": "preferences", "key": "editor", "abstract": "dark", "content": text})
    hits = prefilter(InMemoryStore(), batch, [PREFS] * len(batch))
    assert "c0" in hits[-1] and hits[-1]["c0"]["content"] == text


def test_each_namespace_is_refreshed_once_per_batch(monkeypatch: Any) -> None:
    calls: list[tuple[str, ...]] = []
    real = prefilter_module.indexes

    def counting(store: Any, namespaces: list[tuple[str, ...]]) -> Any:
        calls.extend(namespaces)
        return real(store, namespaces)

    monkeypatch.setattr(prefilter_module, "indexes", counting)
    events = memory_namespace("events", "alice", "coder")
    batch = [{"category": c, "key": None, "abstract": f"a {i}", "content": f"Fact {i}."} for i in range(50) for c in ("preferences", "events")]
    prefilter(InMemoryStore(), batch, [PREFS if c["category"] == "preferences" else events for c in batch])
    assert sorted(calls) == sorted([PREFS, events])
