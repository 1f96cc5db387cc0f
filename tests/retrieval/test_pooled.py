"""A lazily loaded session's search (issue 22, item 3): the pool of held messages and the store's
candidates is kept per session and brought up to date, so a repeated search tokenizes nothing
again, a new message is tokenized once per index, and the scores equal a pool built afresh."""

from __future__ import annotations

from pathlib import Path

import pytest
from stores_util import make_store

from session_graph import SessionManager
from session_graph.retrieval import messages
from session_graph.retrieval.messages import PooledSource, _pools, _sources
from session_graph.retrieval.search import search


@pytest.mark.parametrize("kind", ["jsonl", "sqlite"])
def test_a_repeated_lazy_search_tokenizes_only_what_changed(kind: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    manager = SessionManager(make_store(kind, tmp_path))
    session = manager.get_or_create("orchard")
    session.append_message({"role": "system", "content": "You are helpful."})
    for i in range(120):
        session.append_message({"role": "user", "content": f"apple note {i} orchard" if i % 3 else f"pear note {i} barn"})
        session.append_message({"role": "assistant", "content": f"ok {i}"})
    session.use_lite(messages=10)
    session.resize(force="lite")
    manager.save(session)
    lazy = SessionManager(make_store(kind, tmp_path)).get_or_create("orchard")
    first = lazy.search("apple orchard", k=5)
    assert not lazy.full_chat_history.loaded and any(1 <= h.seq < lazy.full_chat_history.start for h in first)
    real, calls = messages.terms, []
    monkeypatch.setattr(messages, "terms", lambda text: calls.append(text) or real(text))
    assert lazy.search("apple orchard", k=5) == first and calls == []  # nothing changed: nothing tokenized
    lazy.search("pear barn", k=5)  # other candidates from the store: only those new to the pool
    assert 0 < len(calls) <= 50 and all("pear" in text for text in calls)  # at most the candidates (50), none held
    calls.clear()
    lazy.append_message({"role": "user", "content": "apple orchard visit on sunday"})
    hits = lazy.search("apple orchard", k=5)
    assert calls == ["apple orchard visit on sunday"] * 2  # the session's own index and the pool's, once each
    pool = _pools[_sources[lazy]]
    afresh = PooledSource(_sources[lazy], list(pool._stored.values()))
    assert [(h.seq, h.score) for h in search(afresh, "", "apple orchard", 5)] == [(h.seq, pytest.approx(h.score)) for h in hits]
    assert pool.index.stats() == afresh.index.stats()  # removals leave the statistics of a rebuilt index
