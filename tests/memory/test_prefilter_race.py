"""A memory forgotten (or replaced) by another writer while a lookup is under way: the lookup
goes on with what is still there, never a KeyError. Another thread's refresh of the shared
index is made at a fixed point of the lookup (the store's vector search), so the interleaving
is deterministic."""

from __future__ import annotations

from typing import Any

from langchain_core.embeddings import Embeddings
from langgraph.store.memory import InMemoryStore

from session_graph.memory import MemoryConfig
from session_graph.memory.apply import apply_op
from session_graph.memory.manage import forget
from session_graph.memory.plan import create_plan
from session_graph.memory.prefilter import indexes, prefilter
from session_graph.memory.recall import remember

PREFS = ("user", "alice", "memories", "preferences")


class Interleaving(Embeddings):
    """Embeds by two word counts; at its first query, runs ``meanwhile`` (another writer's turn)."""

    def __init__(self) -> None:
        self.meanwhile: Any = None

    def _vector(self, text: str) -> list[float]:
        words = text.lower().split()
        return [words.count("aisle") + 0.1, words.count("printer") + 0.1]

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [self._vector(t) for t in texts]

    def embed_query(self, text: str) -> list[float]:
        if self.meanwhile is not None:
            action, self.meanwhile = self.meanwhile, None
            action()
        return self._vector(text)


def put(store: Any, content: str, key: str) -> None:
    (op,) = create_plan([{"category": "preferences", "key": key, "abstract": content, "content": content}], [list(PREFS)])
    apply_op(store, op, f"{key}#0", [], "2026-01-01T00:00:00Z")


def setup() -> tuple[MemoryConfig, Interleaving]:
    embeddings = Interleaving()
    store = InMemoryStore(index={"dims": 2, "embed": embeddings, "fields": ["abstract", "content"]})
    memory = MemoryConfig(store=store, user="alice", agent="coder")
    for n in range(6):
        put(store, f"The user wants the aisle printer number {n} when printing.", f"printer_{n}")
    indexes(store, [PREFS])  # the shared index is current

    def another_writer() -> None:  # forgets the best lexical match and refreshes the shared index
        forget(memory, "printer_0", "preferences")
        indexes(store, [PREFS])

    embeddings.meanwhile = another_writer
    return memory, embeddings


def test_a_lookup_goes_on_when_a_hit_is_forgotten_meanwhile() -> None:
    memory, _ = setup()
    candidate = {"category": "preferences", "key": None, "abstract": "aisle printer 0", "content": "The aisle printer number 0."}
    (hits,) = prefilter(memory.memory_store, [candidate], [PREFS])
    keys = [hit["key"] for hit in hits.values()]
    assert "printer_0" not in keys and "printer_1" in keys  # the forgotten one is gone, the others are found


def test_remember_goes_on_when_a_hit_is_forgotten_meanwhile() -> None:
    memory, _ = setup()
    assert remember(memory, "The user wants the aisle printer number 0 again.", "preferences") in ("created", "updated")
