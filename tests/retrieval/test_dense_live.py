"""Dense history search without listing the tenant per query (issue 22, item 6): on the JSONL
store a ``DenseIndex`` keeps each tenant's vectors up to date with what the index added since its
last look (``documents_since``), embeds each message once, ranks as the full listing does, and
lists the tenant again only after a removal (a deleted session), never showing what is gone."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
import random

from langchain_core.embeddings import Embeddings
import pytest
from stores_util import fresh_tenant, make_store

from session_graph import DenseIndex, SessionManager
from session_graph.stores.jsonl import JsonlStore

TOPICS = ["moving house", "sofa shopping", "porto trip", "cat food", "tax return", "guitar lessons"]


class Topics(Embeddings):
    """One axis per topic word (plus noise from the text); counts the texts it embeds."""

    def __init__(self) -> None:
        self.embedded: list[str] = []

    def _vector(self, text: str) -> list[float]:
        noise = random.Random(text)
        return [sum(text.count(w) for w in topic.split()) + noise.random() * 0.1 for topic in TOPICS]

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        self.embedded += texts
        return [self._vector(t) for t in texts]

    def embed_query(self, text: str) -> list[float]:
        return self._vector(text)


def fill(manager: SessionManager, key: str, count: int, start: int = 0) -> None:
    session = manager.get_or_create(key)
    for n in range(start, start + count):
        session.append_message({"role": "user", "content": f"note {key}{n} about {TOPICS[n % len(TOPICS)]}"})
    manager.save(session)


@pytest.fixture(params=["jsonl", "sqlite", "postgres"])
def manager(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[SessionManager]:
    # SQL stores: documents_since from the sessions' counts and last messages
    with SessionManager(make_store(request.param, tmp_path), tenant=fresh_tenant()) as manager:  # closed: no pool left open
        yield manager


def test_new_messages_are_embedded_once_and_the_tenant_is_not_listed_per_query(manager: SessionManager,
                                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    model = Topics()
    dense = DenseIndex(model)
    fill(manager, "a", 30)
    source = manager.store.search_index  # type: ignore[attr-defined]
    listed = []
    real = source.documents
    monkeypatch.setattr(source, "documents", lambda *a, **k: listed.append(1) or real(*a, **k))
    manager.search("porto", k=3, dense=dense)
    assert len(listed) == 1 and len(model.embedded) == 30  # the first search lists once, embeds all
    fill(manager, "b", 6)
    hits = manager.search("guitar", k=3, dense=dense, bridge=0)
    assert len(listed) == 1 and len(model.embedded) == 36  # only the new ones, no listing
    assert all("guitar" in h.text for h in hits)
    manager.search("guitar lessons", k=3, dense=dense)
    assert len(listed) == 1 and len(model.embedded) == 36


def test_the_kept_vectors_rank_as_the_full_listing_does(manager: SessionManager) -> None:
    for key in ("a", "b", "c"):
        fill(manager, key, 40)
    source = manager.store.search_index  # type: ignore[attr-defined]
    live, listed = DenseIndex(Topics()), DenseIndex(Topics())
    for query in ("sofa shopping", "cat food tax", "moving house porto trip"):
        kept = live.search_source(query, source, manager.tenant, 10)
        documents = source.documents(manager.tenant)
        full = listed.search(query, documents, 10, lambda refs: {(h.key, h.seq): h.text for h in source.fetch(manager.tenant, refs, {})},
                             tenant=manager.tenant)
        assert [ref for ref, _ in kept] == [ref for ref, _ in full]
        assert [score for _, score in kept] == pytest.approx([score for _, score in full], abs=1e-5)


def test_a_deleted_session_is_never_found_and_a_rewritten_one_is_embedded_again(manager: SessionManager) -> None:
    model = Topics()
    dense = DenseIndex(model)
    fill(manager, "a", 12)
    fill(manager, "gone", 12, start=100)
    assert any(h.key == "gone" for h in manager.search("sofa shopping", k=10, dense=dense, bridge=0))
    manager.delete("gone")
    assert not any(h.key == "gone" for h in manager.search("sofa shopping", k=10, dense=dense, bridge=0))
    before = len(model.embedded)
    session = manager.get_or_create("gone")  # the same key again: (gone, 0) is another message now
    session.append_message({"role": "user", "content": "a cat food order"})
    manager.save(session)
    hits = manager.search("cat food", k=1, dense=dense, bridge=0)
    assert [h.text for h in hits] == ["a cat food order"]
    assert model.embedded[before:] == ["a cat food order"]  # listed again, only the new message embedded


def test_tenants_keep_their_own_vectors(tmp_path: Path) -> None:
    store = JsonlStore(tmp_path)
    alice, bob = SessionManager(store, tenant="alice"), SessionManager(store, tenant="bob")
    fill(alice, "s", 12)
    session = bob.get_or_create("s")
    session.append_message({"role": "user", "content": "bob plays no guitar"})
    bob.save(session)
    dense = DenseIndex(Topics())
    assert {h.text for h in bob.search("guitar lessons", k=5, dense=dense, bridge=0)} == {"bob plays no guitar"}
    assert all(h.text.startswith("note") for h in alice.search("guitar lessons", k=5, dense=dense, bridge=0))


def test_an_in_memory_session_embeds_only_new_messages_and_is_not_listed_per_query(monkeypatch: pytest.MonkeyPatch) -> None:
    from session_graph import Session
    from session_graph.retrieval.messages import MessageSource

    listed = []
    real = MessageSource.documents
    monkeypatch.setattr(MessageSource, "documents", lambda self, *a, **k: listed.append(1) or real(self, *a, **k))
    model, session = Topics(), Session()
    for n in range(20):
        session.append_message({"role": "user", "content": f"note {n} about {TOPICS[n % len(TOPICS)]}"})
    dense = DenseIndex(model)
    assert all("porto" in h.text for h in session.search("porto trip", k=3, dense=dense, bridge=0))
    assert len(listed) == 1 and len(model.embedded) == 20
    session.append_message({"role": "user", "content": "guitar lessons on friday"})
    assert session.search("guitar lessons", k=1, dense=dense, bridge=0)[0].text == "guitar lessons on friday"
    assert len(listed) == 1 and model.embedded[20:] == ["guitar lessons on friday"]  # what is new, nothing listed
    session.search("cat food", k=2, dense=dense)
    assert len(listed) == 1 and len(model.embedded) == 21 and len(dense) == 21


def test_a_search_of_some_sessions_reads_the_vectors_the_whole_tenant_search_keeps(manager: SessionManager) -> None:
    model = Topics()
    dense = DenseIndex(model)
    fill(manager, "a", 12)
    fill(manager, "b", 12, start=50)
    manager.search("tax return", k=3, dense=dense, bridge=0)
    assert len(model.embedded) == 24 and len(dense) == 24
    hits = manager.search("tax return", k=3, key="b", dense=dense, bridge=0)  # one session: its documents, handed over
    assert all(h.key == "b" for h in hits) and sorted(h.text for h in hits[:2]) == ["note b52 about tax return", "note b58 about tax return"]
    assert len(model.embedded) == 24 and len(dense) == 24  # one vector store: nothing embedded again


def test_a_reset_session_that_grew_past_its_old_length_is_embedded_again(manager: SessionManager) -> None:
    model = Topics()
    dense = DenseIndex(model)
    fill(manager, "a", 6)
    manager.search("porto trip", k=3, dense=dense, bridge=0)
    session = manager.get_or_create("a")
    session.clear()  # the stored messages are replaced (a reset), then more than before are written
    for n in range(9):
        session.append_message({"role": "user", "content": f"fresh {n} about cat food"})
    manager.save(session)
    before = len(model.embedded)
    hits = manager.search("porto trip", k=3, dense=dense, bridge=0)
    assert all("porto" not in h.text for h in hits)  # no vector of a message that is gone ranks a new one
    assert sorted(model.embedded[before:]) == sorted(f"fresh {n} about cat food" for n in range(9)) and len(dense) == 9


def test_a_first_dense_search_of_many_messages_reads_their_texts_in_bounded_fetches(manager: SessionManager) -> None:
    model = Topics()
    fill(manager, "big", 600)  # SQLite takes at most 500 parts per compound SELECT: one fetch of 600 refs failed
    hits = manager.search("guitar lessons", k=3, dense=DenseIndex(model), bridge=0)
    assert len(model.embedded) == 600 and all("guitar" in h.text for h in hits)
    hits = manager.search("guitar lessons", k=3, key="big", dense=DenseIndex(model), bridge=0)  # the documents path too
    assert len(model.embedded) == 1200 and all("guitar" in h.text for h in hits)


def test_an_in_memory_message_rewritten_under_its_id_is_embedded_again() -> None:
    from dataclasses import replace

    from langchain_core.messages import HumanMessage

    from session_graph import Session

    model, session = Topics(), Session()
    for n in range(6):
        session.append_message({"role": "user", "content": f"note {n} about {TOPICS[n % len(TOPICS)]}"})
    dense = DenseIndex(model)
    assert session.search("porto trip", k=1, dense=dense, bridge=0)[0].seq == 2
    state = session.state
    history = list(state.full_chat_history)
    history[2] = HumanMessage("redacted, about cat food", id=history[2].id)  # replaced by id (LangGraph's add_messages way)
    session.restore(replace(state, full_chat_history=history, current_chat_history=history[-2:]))
    hits = session.search("porto trip", k=3, dense=dense, bridge=0)
    assert "redacted, about cat food" in model.embedded  # the new text is embedded, not the old vector kept under the same id
    assert all(h.seq != 2 or h.score < 0.5 for h in hits)


def test_sessions_of_two_tenants_with_one_key_keep_their_own_vectors(tmp_path: Path) -> None:
    store = JsonlStore(tmp_path)
    alice = SessionManager(store, tenant="alice")
    bob = alice.for_tenant("bob")
    mine, theirs = alice.get_or_create("main"), bob.get_or_create("main")  # one key per user: the usual layout
    for n in range(30):
        mine.append_message({"role": "user", "content": f"alice {n} about {TOPICS[n % len(TOPICS)]}"})
        theirs.append_message({"role": "user", "content": f"bob {n} about {TOPICS[(n + 1) % len(TOPICS)]}"})
    model = Topics()
    dense = DenseIndex(model)
    for _ in range(3):  # alternating searches: each session embedded once, not once per turn of the other
        assert mine.search("porto trip", k=1, dense=dense, bridge=0)[0].text.startswith("alice")
        assert theirs.search("porto trip", k=1, dense=dense, bridge=0)[0].text.startswith("bob")
    assert len(model.embedded) == 60


def test_one_dense_index_searched_over_two_stores_does_not_mix_their_marks(tmp_path: Path) -> None:
    first = SessionManager(JsonlStore(tmp_path / "jsonl"), tenant="alice")
    second = SessionManager(make_store("sqlite", tmp_path), tenant="alice")
    fill(first, "a", 6)
    fill(second, "b", 6, start=3)
    dense = DenseIndex(Topics())
    for _ in range(2):  # one index per store is the advice; sharing one must still answer right, never raise
        assert [h.key for h in first.search("porto trip", k=2, dense=dense, bridge=0)] == ["a", "a"]
        assert [h.key for h in second.search("porto trip", k=2, dense=dense, bridge=0)] == ["b", "b"]


def test_histories_kept_per_session_id_are_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    from session_graph import Session
    from session_graph.retrieval import dense as dense_module

    monkeypatch.setattr(dense_module, "KEPT_PER_SESSION", 2)
    dense = DenseIndex(Topics())
    for n in range(4):  # four histories under one session id (cleared and refilled, or four tenants' "main")
        session = Session(id="main")
        session.append_message({"role": "user", "content": f"history {n} about porto trip"})
        assert session.search("porto trip", k=1, dense=dense, bridge=0)[0].text == f"history {n} about porto trip"
    assert len(dense._vectors) == 2 and len(dense) == 2  # the two most recently searched
