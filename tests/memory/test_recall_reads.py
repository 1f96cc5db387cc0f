"""What a recall reads (issue 22, item 4): the change feeds of the user's categories in one
``batch`` per recall, one namespace per owner (one query each on a database store, not one per
category), nothing more
when nothing changed; a store's own vector index recognised by a declared capability
(``VectorIndexedStore``), not by what else the store happens to have."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from langgraph.store.base import GetOp
from langgraph.store.memory import InMemoryStore

from session_graph.memory.apply import apply_op
from session_graph.memory.config import MemoryConfig
from session_graph.memory.filestore import FileMemoryStore
from session_graph.memory.plan import create_plan
from session_graph.memory.prefilter import VectorIndexedStore, indexed_by_meaning
from session_graph.memory.recall import recall


class Counting(InMemoryStore):
    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.batches: list[list[Any]] = []

    def batch(self, ops: Any) -> list[Any]:
        ops = list(ops)
        self.batches.append(ops)
        return super().batch(ops)


def test_a_recall_reads_every_category_s_feed_in_one_batch() -> None:
    store = Counting()
    memory = MemoryConfig(store=store, user="alice", agent="coder")
    namespace = memory.namespace("preferences")
    for n, text in enumerate(["The user prefers dark mode.", "The user runs pytest.", "The user drinks espresso."]):
        (op,) = create_plan([{"category": "preferences", "key": f"k{n}", "abstract": text, "content": text}], [list(namespace)])
        apply_op(store, op, f"r{n}", [], "2026-01-01T00:00:00Z")
    recall(memory, "dark mode", 3)  # the first one lists each category once
    store.batches.clear()
    assert [value["content"] for value in recall(memory, "dark mode", 1)] == ["The user prefers dark mode."]
    feeds = [ops for ops in store.batches if all(isinstance(op, GetOp) and op.key.startswith("changes-") for op in ops)]
    assert len(store.batches) == 1 and len(feeds) == 1 and len(feeds[0]) == len(memory_categories())
    owners = {op.namespace for op in feeds[0]}  # a database store runs one query per namespace of a batch
    assert owners == {("memory_changes", "user", "alice"), ("memory_changes", "agent", "coder")}


def memory_categories() -> list[str]:
    from session_graph.memory.categories import CATEGORIES

    return list(CATEGORIES)


def test_a_store_s_own_vector_index_is_a_declared_capability(tmp_path: Path) -> None:
    indexed = InMemoryStore(index={"embed": lambda texts: [[1.0, 0.0] for _ in texts], "dims": 2})
    assert isinstance(indexed, VectorIndexedStore) and indexed_by_meaning(indexed)
    assert not indexed_by_meaning(InMemoryStore())  # the attribute, no index: ranked by our own vectors
    assert not isinstance(FileMemoryStore(tmp_path), VectorIndexedStore)  # its search(query=) is BM25
    assert not indexed_by_meaning(FileMemoryStore(tmp_path))
