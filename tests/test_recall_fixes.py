"""Review findings of ranked recall (issue 23): each test failed before its fix."""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

import pytest
from stores_util import fresh_tenant, make_store

from session_graph import DenseIndex, SessionManager
from session_graph.retrieval.tokenize import terms


class ConceptEmbeddings:
    """One dimension per concept; counts the texts it embeds and the calls."""

    concepts: ClassVar[dict[str, int]] = {"mov": 0, "relocat": 0, "sofa": 1, "porto": 2, "cat": 3}

    def __init__(self) -> None:
        self.texts = 0
        self.calls = 0

    def _vector(self, text: str) -> list[float]:
        vector = [0.0] * 4
        for term in terms(text):
            if term in self.concepts:
                vector[self.concepts[term]] += 1.0
        return vector

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        self.texts += len(texts)
        self.calls += 1
        return [self._vector(t) for t in texts]

    def embed_query(self, text: str) -> list[float]:
        return self._vector(text)


# -- 1. the dense cache is per tenant and session, and built with one concatenation ------------------
@pytest.mark.parametrize("kind", ["jsonl", "sqlite"])
def test_dense_vectors_are_not_shared_across_tenants_with_the_same_message_id(kind: str, tmp_path: Path) -> None:
    store = make_store(kind, tmp_path)
    dense = DenseIndex(ConceptEmbeddings())
    alice, bob = SessionManager(store, tenant=fresh_tenant()), SessionManager(store, tenant=fresh_tenant())
    for manager, text in ((alice, "I'm relocating to Porto."), (bob, "My cat sleeps all day.")):
        session = manager.get_or_create("s")
        session.append_message({"role": "user", "content": text, "id": "m-1"})
        manager.save(session)
    assert [h.text for h in alice.search("relocating", k=1, dense=dense)] == ["I'm relocating to Porto."]
    # bob's message shares the id, but none of alice's similarity: a query about moving finds nothing of his
    assert [h.text for h in bob.search("where am I moving", k=1, dense=dense, bridge=0)] == []
    assert [h.text for h in bob.search("my cat", k=1, dense=dense)] == ["My cat sleeps all day."]
    assert len(dense) == 2


def test_dense_build_joins_its_batches_once(monkeypatch: pytest.MonkeyPatch) -> None:
    import numpy as np

    joins = []
    real = np.concatenate

    def counting(*args, **kwargs):  # type: ignore[no-untyped-def]
        joins.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(np, "concatenate", counting)
    monkeypatch.setattr(np, "vstack", lambda *a, **k: pytest.fail("vstack per batch makes the build quadratic"))
    embeddings = ConceptEmbeddings()
    dense = DenseIndex(embeddings, batch=4)
    documents = [(("s", seq), f"id-{seq}", "") for seq in range(40)]
    texts = {ref: ("sofa" if ref[1] % 2 else "porto") for ref, _, _ in documents}
    found = dense.search("sofa", documents, 5, lambda refs: {ref: texts[ref] for ref in refs})
    assert embeddings.calls == 10 and len(joins) == 1 and len(dense) == 40
    assert all(ref[1] % 2 for ref, _ in found)
