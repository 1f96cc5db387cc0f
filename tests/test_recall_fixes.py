"""Review findings of ranked recall (issue 23): each test failed before its fix."""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

import pytest
from recall_util import fold_away
from stores_util import fresh_tenant, make_store

from session_graph import DenseIndex, Session, SessionManager
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
    assert embeddings.calls == 10 and len(joins) <= 1 and len(dense) == 40  # rows grow by doubling: no join per batch
    assert all(ref[1] % 2 for ref, _ in found)


# -- 3. time bounds are parsed and re-emitted as the stores write ts -----------------------------
def test_time_bound_normalises_offsets_dates_and_missing_fractions() -> None:
    from datetime import date, datetime, timedelta, timezone

    from session_graph.errors import ConfigurationError
    from session_graph.retrieval.search import time_bound

    assert time_bound("2024-03-15T12:00:00+02:00", "since") == "2024-03-15T10:00:00.000000Z"
    assert time_bound("2024-03-15T10:00:00Z", "since") == "2024-03-15T10:00:00.000000Z"
    assert time_bound("2024-03-15", "until") == "2024-03-15T00:00:00.000000Z"
    assert time_bound(date(2024, 3, 15), "until") == "2024-03-15T00:00:00.000000Z"
    assert time_bound(datetime(2024, 3, 15, 1, tzinfo=timezone(timedelta(hours=-5))), "until") == "2024-03-15T06:00:00.000000Z"
    with pytest.raises(ConfigurationError, match="since 'last tuesday' is not an ISO date"):
        time_bound("last tuesday", "since")
    with pytest.raises(ConfigurationError, match="until must be an ISO string, a date or a datetime"):
        time_bound(20240315, "until")  # type: ignore[arg-type]


@pytest.mark.parametrize("kind", ["jsonl", "sqlite"])
def test_search_bounds_with_an_offset_or_without_fractions_select_by_instant(kind: str, tmp_path: Path) -> None:
    from datetime import timedelta, timezone

    manager = SessionManager(make_store(kind, tmp_path), tenant=fresh_tenant())
    session = manager.get_or_create("s")
    session.append_message({"role": "user", "content": "the billing deploy failed"})
    manager.save(session)
    ts = manager.search("billing")[0].ts  # like 2026-11-24T12:05:01.123456Z
    stamp = datetime_of(ts)
    second = stamp.replace(microsecond=0).strftime("%Y-%m-%dT%H:%M:%SZ")  # same second, no fraction
    # text comparison took "...:01Z" > "...:01.123456Z" (Z sorts after '.'): the message was lost
    assert [h.ts for h in manager.search("billing", since=second)] == [ts]
    ahead = stamp.replace(microsecond=0).astimezone(timezone(timedelta(hours=2)))
    # one instant, written in +02:00: as text it is two hours later than every stored ts
    assert [h.ts for h in manager.search("billing", since=ahead.isoformat())] == [ts]
    assert manager.search("billing", until=ahead.isoformat()) == []


def datetime_of(ts: str):  # type: ignore[no-untyped-def]
    from datetime import datetime

    return datetime.fromisoformat(ts.replace("Z", "+00:00"))


# -- 6. "already in the memo" compares against the memo's strings; a tight tool budget cuts the first hit
def _evicted(memo: dict) -> Session:  # type: ignore[type-arg]
    session = Session(memo_update_handler=lambda old, messages, attachments, settings: memo)
    session.configure(mode="memo")
    return fold_away(session, [{"role": "user", "content": 'The code is "alpha-7"\nand the door is blue.'}],
                     "what is the code of the door", 6)


def test_recall_skips_a_hit_the_memo_already_holds_even_with_quotes_and_newlines() -> None:
    from session_graph.integrations.history_recall import HistoryRecall, recall_text

    kept = _evicted({"facts": [{"note": 'The code is "alpha-7" and the door is blue.'}]})
    assert "alpha-7" not in recall_text(kept, HistoryRecall())  # json.dumps escaped the quotes: it was recalled again
    other = _evicted({"facts": ["the user likes tea"]})
    assert "alpha-7" in recall_text(other, HistoryRecall())


def test_search_history_cuts_the_first_hit_to_a_small_budget(tmp_path: Path) -> None:
    from session_graph.integrations.binding import SessionBinding
    from session_graph.integrations.history_recall import HistoryRecall, format_hits, history_tools
    from session_graph.retrieval.hits import SearchHit

    manager = SessionManager(tmp_path / "j", tenant="t")
    session = manager.get_or_create("a")
    session.append_message({"role": "user", "content": "passport renewal " + "details " * 40})
    manager.save(session)
    (tool,) = history_tools(SessionBinding(manager=manager), HistoryRecall(tool_chars=60))
    out = tool.invoke({"query": "passport renewal"})
    assert out != "No earlier message matches." and len(out) <= 60 and "passport" in out and out.endswith("\u2026\"")  # cut inside its quotes
    hit = SearchHit("a", 0, "user", "x" * 500, "2024-03-01T10:00:00Z")
    for budget in (1, 5, 30, 45, 80):
        assert 0 < len(format_hits([hit], budget)) <= budget


# -- 5. the chat reranker reads replies as real models write them, and takes a model name ------------
def test_chat_reranker_ignores_think_sections_and_resolves_model_names() -> None:
    from langchain_core.language_models.fake_chat_models import FakeListChatModel

    from session_graph.errors import ConfigurationError
    from session_graph.retrieval.rerank import chat_reranker

    session = Session()
    for text in ("billing failed on Friday", "billing works again", "billing meeting moved"):
        session.append_message({"role": "user", "content": text})
    lexical = [h.text for h in session.search("billing")]
    thinking = "<think>Maybe [9, 0, 0]? No, the second answers it.</think>\n```json\n[1, 9, 3]\n```"
    assert session.search("billing", k=1, reranker=chat_reranker(FakeListChatModel(responses=[thinking])))[0].text == lexical[1]
    wrapped = 'Here you go: {"scores": [0, 1, 9]}'
    assert session.search("billing", k=1, reranker=chat_reranker(FakeListChatModel(responses=[wrapped])))[0].text == lexical[2]
    with pytest.raises(ConfigurationError, match="chat_reranker's model"):
        chat_reranker(42)
    with pytest.raises(ConfigurationError, match="init_chat_model could not make this model"):
        chat_reranker("no-such-provider:model-x")


def test_chat_reranker_takes_a_model_string(monkeypatch: pytest.MonkeyPatch) -> None:
    import langchain.chat_models
    from langchain_core.language_models.fake_chat_models import FakeListChatModel

    from session_graph.retrieval.rerank import chat_reranker

    named = []
    monkeypatch.setattr(langchain.chat_models, "init_chat_model",
                        lambda name: named.append(name) or FakeListChatModel(responses=["[0, 5]"]))
    assert chat_reranker(" ollama:qwen3 ")("q", ["a", "b"])[1] > 4 and named == ["ollama:qwen3"]


# -- 2. the async plug points search off the event loop ---------------------------------------------
@pytest.mark.parametrize("plug", ["middleware", "node", "hook"])
def test_async_plug_points_recall_off_the_event_loop(plug: str, monkeypatch: pytest.MonkeyPatch) -> None:
    import asyncio
    import threading

    from agents_util import model
    from langchain.agents import create_agent
    from langchain_core.messages import AIMessage, HumanMessage, SystemMessage
    from langgraph.checkpoint.memory import InMemorySaver
    from test_history_recall import folded

    from session_graph.integrations import SessionMiddleware, session_node, session_pre_model_hook

    session = folded("memo")
    threads: list[int] = []
    real = Session.search

    def recording(self: Session, *args, **kwargs):  # type: ignore[no-untyped-def]
        threads.append(threading.get_ident())
        return real(self, *args, **kwargs)

    monkeypatch.setattr(Session, "search", recording)
    messages = [HumanMessage(content="When does my passport expire?", id="q-new")]
    config = {"configurable": {"thread_id": "t"}}

    async def run() -> tuple[int, str]:
        loop = threading.get_ident()
        if plug == "middleware":
            llm = model(iter([AIMessage(content="In June.")]))
            agent = create_agent(llm, middleware=[SessionMiddleware(session)], checkpointer=InMemorySaver())
            await agent.ainvoke({"messages": messages}, config)
            return loop, llm.prompts[-1][0].text
        if plug == "node":
            out = (await session_node(session).ainvoke({"messages": messages}, config))["messages"].value
        else:
            out = (await session_pre_model_hook(session).ainvoke({"messages": messages}, config))["llm_input_messages"]
        return loop, "\n".join(m.text for m in out if isinstance(m, SystemMessage))

    loop, context = asyncio.run(run())
    assert "4417" in context  # recalled
    assert threads and loop not in threads  # and searched in a worker thread, not on the loop


def test_session_asearch_matches_search() -> None:
    import asyncio

    session = Session()
    for text in ("billing failed on Friday", "billing works again", "the weather"):
        session.append_message({"role": "user", "content": text})
    assert asyncio.run(session.asearch("billing", 2, around=1)) == session.search("billing", 2, around=1)
    assert asyncio.run(session.asearch("WORKS", mode="substring")) == session.search("WORKS", mode="substring")


# -- 4. substring search of one session finds its matches however many the tenant has ---------------
@pytest.mark.parametrize("kind", ["jsonl", "sqlite"])
def test_substring_search_of_one_key_is_not_cut_by_the_tenants_other_matches(kind: str, tmp_path: Path,
                                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    manager = SessionManager(make_store(kind, tmp_path), tenant=fresh_tenant())
    for key, count in (("b-quiet", 2), ("a-busy", 30)):  # the busy one listed first in every store
        session = manager.get_or_create(key)
        for i in range(count):
            session.append_message({"role": "user", "content": f"the invoice number {i} of {key}"})
        manager.save(session)
    real = manager.store.search
    # a small cap stands in for the 10,000 the tenant-wide query was cut at
    monkeypatch.setattr(manager.store, "search", lambda tenant, text, limit=100: real(tenant, text, min(limit, 20)))
    found = manager.search("INVOICE", 5, key="b-quiet", mode="substring")
    assert [(h.key, h.seq) for h in found] == [("b-quiet", 0), ("b-quiet", 1)]
    assert found[0].text == "the invoice number 0 of b-quiet" and found[0].role == "user" and found[0].ts
    assert len(manager.search("invoice", 3, key="a-busy", mode="substring")) == 3
    assert manager.search("invoice", 3, key="missing", mode="substring") == []


# -- 8. a query on an unchanged tenant does not list and stat every session -------------------------
def test_jsonl_search_rescans_only_when_the_tenant_changed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import os
    import time

    from session_graph.stores import JsonlStore, search_marker

    monkeypatch.setattr(search_marker, "RACY", 0.05)  # this test's file system keeps ns timestamps
    mine, other = SessionManager(JsonlStore(tmp_path), tenant="t"), SessionManager(JsonlStore(tmp_path), tenant="t")
    for key in ("a", "b", "c"):
        session = mine.get_or_create(key)
        session.append_message({"role": "user", "content": f"notes about session {key}"})
        mine.save(session)
    listings = []
    real = os.scandir
    monkeypatch.setattr(os, "scandir", lambda path: listings.append(path) or real(path))

    def quiet_search(query: str, manager: SessionManager = mine) -> list[str]:
        time.sleep(0.1)  # past _FRESH and _RACY
        return sorted(f"{h.key}#{h.seq}" for h in manager.search(query, 10))

    assert quiet_search("notes") == ["a#0", "b#0", "c#0"]
    first = len(listings)
    assert first >= 1 and quiet_search("notes") == ["a#0", "b#0", "c#0"] and quiet_search("session") == ["a#0", "b#0", "c#0"]
    assert len(listings) == first  # nothing changed: no listing of the folder
    session = other.get_or_create("b")  # another store (another process) appends to an existing log
    session.append_message({"role": "user", "content": "more notes in b"})
    other.save(session)
    assert quiet_search("notes") == ["a#0", "b#0", "b#1", "c#0"] and len(listings) == first + 1
    other.delete("a")
    assert quiet_search("notes") == ["b#0", "b#1", "c#0"]
    monkeypatch.setattr(search_marker, "RESCAN", 0.0)  # and a full scan at least every _RESCAN seconds
    quiet_search("notes")
    assert len(listings) == first + 3


def test_dense_reembeds_a_message_stored_again_under_the_same_id() -> None:
    embeddings = ConceptEmbeddings()
    dense = DenseIndex(embeddings)
    texts = {("s", 0): "I'm relocating to Porto."}
    before = [(("s", 0), "m-1", "2024-03-01T10:00:00.000000Z")]
    assert dense.search("moving", before, 1, lambda refs: texts, tenant="t")
    texts[("s", 0)] = "My cat sleeps all day."  # the session was reset and written again: same seq and id
    after = [(("s", 0), "m-1", "2024-03-02T09:00:00.000000Z")]
    assert dense.search("moving", after, 1, lambda refs: texts, tenant="t") == []
    assert dense.search("cat", after, 1, lambda refs: texts, tenant="t")[0][0] == ("s", 0) and embeddings.texts == 2
