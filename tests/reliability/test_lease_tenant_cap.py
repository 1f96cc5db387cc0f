"""A tenant the id cap accepts can take its leases: the lease records live under a derived
tenant (``lease_tenant``: ``<tenant>#commit-leases``), which must obey the same cap, or a
manager of a tenant near ``MAX_ID_LENGTH`` characters could never commit with a non-file memory
store (the commit lease) or fold under the fold lease: the store refused the derived tenant."""

from __future__ import annotations

import json
from pathlib import Path

from langchain_core.language_models.fake_chat_models import FakeListChatModel
from langchain_core.messages import AIMessage, HumanMessage
from langgraph.store.memory import InMemoryStore
import pytest
from stores_util import fresh_tenant, store_spec

from session_graph._base.ids import MAX_ID_LENGTH
from session_graph.memory import MemoryConfig
from session_graph.memory.recall import recall
from session_graph.stores import SessionManager, open_store
from session_graph.stores.lease import CommitLease, lease_tenant


@pytest.mark.parametrize("kind", ["jsonl", "sqlite", "postgres"])
@pytest.mark.parametrize("purpose", ["commit", "fold"])
def test_a_tenant_at_the_cap_takes_and_releases_its_lease(purpose: str, kind: str, tmp_path: Path) -> None:
    tenant = fresh_tenant() + "\U0001f600" * (MAX_ID_LENGTH - len(fresh_tenant()))  # 4 bytes a character: the longest
    with SessionManager(open_store(store_spec(kind, tmp_path)), tenant=tenant) as manager:  # closed: no pool left open
        lease = CommitLease(manager.store, tenant, "k", purpose=purpose)
        assert lease.try_acquire()
        assert not CommitLease(manager.store, tenant, "k", purpose=purpose).try_acquire()  # still one lease per session
        lease.release()
    assert len(lease_tenant(tenant, purpose)) <= MAX_ID_LENGTH
    assert lease_tenant("acme", purpose) == f"acme#{purpose}-leases"  # short tenants: the names stored before
    assert lease_tenant("a" * 250 + "1", purpose) != lease_tenant("a" * 250 + "2", purpose)  # long ones stay apart


def test_a_manager_of_a_tenant_at_the_cap_commits_into_a_langgraph_store(tmp_path: Path) -> None:
    tenant = "t" * MAX_ID_LENGTH
    memory = MemoryConfig(store=InMemoryStore(), user="alice", agent="coder")
    manager = SessionManager(tmp_path / "sessions", tenant=tenant, memory=memory)
    session = manager.get_or_create("k")
    session.append_message(HumanMessage(content="I like fast tests."))
    session.append_message(AIMessage(content="Noted."))
    pref = {"category": "preferences", "key": "testing", "abstract": "Prefers fast tests", "content": "Fast tests."}
    session.handlers.model = FakeListChatModel(
        responses=["# Session Summary\n**Overview**: tests: keep them fast | done", json.dumps({"memories": [pref]})] * 3)
    result = manager.commit(session)
    assert result["status"] == "committed", result
    assert manager.memory is not None and [v["content"] for v in recall(manager.memory, "fast tests", 3)] == ["Fast tests."]
