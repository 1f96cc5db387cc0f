"""A memory store whose database connection drops: a clear, retryable error, then a resume.

LangGraph's ``PostgresStore`` on one psycopg connection never reconnects after the server
drops it; a commit then raised a raw ``psycopg.OperationalError`` forever. It is now a
``StoreUnavailableError`` (a ``StoreError``, ``retryable``), nothing is lost (the archive stays
pending) and the commit resumes once the store works. The pooled form (what the docs
recommend) rides over the drop. The Postgres cases need a server (``SESSION_GRAPH_PG_DSN``;
CI has one); the first case reproduces the failure with the same exception class offline.
"""

from __future__ import annotations

import json
from typing import Any
import uuid

from langchain_core.language_models.fake_chat_models import FakeListChatModel
from langchain_core.messages import AIMessage, HumanMessage
from langgraph.store.memory import InMemoryStore
import psycopg
import pytest
from stores_util import postgres_dsn

from session_graph import Session, StoreError, StoreUnavailableError
from session_graph.memory import MemoryConfig

SUMMARY = "# Session Summary\n**Overview**: fast tests | done"
PREF = {"category": "preferences", "key": "testing", "abstract": "Prefers fast tests", "content": "Prefers fast tests."}
EVENT = {"category": "events", "abstract": "Asked for short tests", "content": "On 2026-11-24 asked for short tests."}


def model() -> FakeListChatModel:
    """Replies for two commits: the first mines a preference, the second an event (no decision needed)."""
    return FakeListChatModel(responses=[SUMMARY, json.dumps({"memories": [PREF]}), SUMMARY, json.dumps({"memories": [EVENT]})])


def talk(session: Session, text: str = "I like fast tests.") -> None:
    session.append_message(HumanMessage(content=text))
    session.append_message(AIMessage(content="Noted."))


class Dropped(InMemoryStore):
    """An in-memory store whose 'connection' is dropped: every call fails as psycopg fails."""

    broken = True

    def batch(self, ops: Any) -> Any:
        if self.broken:
            raise psycopg.OperationalError("the connection is closed")
        return super().batch(ops)


def test_a_dropped_connection_is_a_clear_retryable_error_and_the_commit_resumes() -> None:
    store = Dropped()
    counting = model()
    session = Session("chat", model=counting, memory=MemoryConfig(store=store, user="alice", agent="coder"))
    talk(session)
    with pytest.raises(StoreUnavailableError, match="ConnectionPool") as caught:
        session.commit()
    assert isinstance(caught.value, StoreError) and caught.value.retryable
    assert isinstance(caught.value.__cause__, psycopg.OperationalError)  # the driver's error stays attached
    assert session.state.archives.get("pending")  # nothing lost: the archive waits
    store.broken = False
    result = session.commit()
    assert result["status"] == "committed" and result["memories"]["created"] == ["testing"]


def _postgres_store(connection: Any) -> Any:
    from langgraph.store.postgres import PostgresStore

    store = PostgresStore(connection)
    store.setup()
    return store


def _schema(dsn: str) -> str:
    schema = f"memory_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(dsn, autocommit=True) as admin:
        admin.execute(f"CREATE SCHEMA {schema}")
    return schema


def _drop_connections(dsn: str, schema: str) -> int:
    """Terminate every server connection of the test's schema (what a server restart or a proxy does)."""
    with psycopg.connect(dsn, autocommit=True) as admin:
        rows = admin.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE pid <> pg_backend_pid() "
                             "AND backend_type = 'client backend' AND application_name = %s", (schema,)).fetchall()
    return len(rows)


def test_postgres_store_on_one_connection_fails_clearly_after_a_drop() -> None:
    from psycopg.rows import dict_row

    dsn = postgres_dsn()
    schema = _schema(dsn)
    connection = psycopg.connect(dsn, autocommit=True, prepare_threshold=0, row_factory=dict_row,
                                 options=f"-c search_path={schema}", application_name=schema)
    memory = MemoryConfig(store=_postgres_store(connection), user="alice", agent="coder")
    session = Session("chat", model=model(), memory=memory)
    talk(session)
    assert session.commit()["status"] == "committed"
    assert _drop_connections(dsn, schema) >= 1
    talk(session, "And short ones.")
    with pytest.raises(StoreUnavailableError) as caught:
        session.commit()
    assert caught.value.retryable and session.state.archives.get("pending")
    fresh = psycopg.connect(dsn, autocommit=True, prepare_threshold=0, row_factory=dict_row,
                            options=f"-c search_path={schema}")
    session.memory = MemoryConfig(store=_postgres_store(fresh), user="alice", agent="coder")
    assert session.commit()["status"] == "committed"  # rebuilt on a new connection: it resumes


def test_postgres_store_on_a_checked_pool_rides_over_a_drop() -> None:
    from psycopg.rows import dict_row
    from psycopg_pool import ConnectionPool

    dsn = postgres_dsn()
    schema = _schema(dsn)
    pool = ConnectionPool(dsn, min_size=1, max_size=2, open=True, check=ConnectionPool.check_connection,
                          kwargs={"autocommit": True, "prepare_threshold": 0, "row_factory": dict_row,
                                  "options": f"-c search_path={schema}", "application_name": schema})
    try:
        memory = MemoryConfig(store=_postgres_store(pool), user="alice", agent="coder")
        session = Session("chat", model=model(), memory=memory)
        talk(session)
        assert session.commit()["status"] == "committed"
        assert _drop_connections(dsn, schema) >= 1
        talk(session, "And short ones.")
        assert session.commit()["status"] == "committed"  # the pool replaced the dropped connection
    finally:
        pool.close()
