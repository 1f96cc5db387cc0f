"""Memory-store fixtures: every apply test runs on our file store and LangGraph's stores."""

from __future__ import annotations

from pathlib import Path
import sqlite3
from typing import Any
import uuid

from langgraph.store.base import BaseStore
from langgraph.store.memory import InMemoryStore
from stores_util import postgres_dsn

from session_graph.memory import FileMemoryStore

MEMORY_BACKENDS = ["file", "inmemory", "sqlite", "postgres"]  # postgres: LangGraph's PostgresStore (skips without a server)


def make_memory_store(kind: str, tmp_path: Path) -> BaseStore:
    if kind == "file":
        return FileMemoryStore(tmp_path / "memory", fsync=False)
    if kind == "inmemory":
        return InMemoryStore()
    if kind == "postgres":
        return _postgres_store()
    from langgraph.store.sqlite import SqliteStore

    store = SqliteStore(sqlite3.connect(tmp_path / "memory.sqlite3", check_same_thread=False, isolation_level=None))
    store.setup()
    return store


def dump_memories(store: BaseStore, *prefixes: tuple[str, ...]) -> dict[tuple[Any, ...], dict[str, Any]]:
    """Every item under the prefixes, without the fields that carry wall-clock times."""
    out = {}
    for prefix in prefixes or (("user",), ("agent",)):
        for item in store.search(prefix, limit=1_000_000):
            if item.namespace[2] == "memories_meta":  # the change feed of stores written before (bookkeeping)
                continue
            value = {k: v for k, v in item.value.items() if k not in ("created_at", "updated_at", "last_confirmed_at", "last_used_at")}
            if "sources" in value:  # cited message ids are random per run
                value["sources"] = [{k: v for k, v in s.items() if k != "message_ids"} for s in value["sources"]]
            out[(*item.namespace, item.key)] = value
    return out


def active(store: BaseStore, namespace: tuple[str, ...]) -> dict[str, dict[str, Any]]:
    return {i.key: i.value for i in store.search(namespace, filter={"status": "active"}, limit=100_000) if i.namespace == namespace}


def _postgres_store() -> BaseStore:
    """LangGraph's PostgresStore in a schema of its own (its table names are fixed)."""
    from langgraph.store.postgres import PostgresStore
    import psycopg
    from psycopg.rows import dict_row

    dsn = postgres_dsn()
    schema = f"memory_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(dsn, autocommit=True) as admin:
        admin.execute(f"CREATE SCHEMA {schema}")
    connection = psycopg.connect(dsn, autocommit=True, prepare_threshold=0, row_factory=dict_row,
                                 options=f"-c search_path={schema}")
    store = PostgresStore(connection)
    store.setup()
    return store


class FailingStore(InMemoryStore):
    """An in-memory store that raises ``failure`` on every call while it is set."""

    failure: BaseException | None = None

    def batch(self, ops: Any) -> Any:
        if self.failure is not None:
            raise self.failure
        return super().batch(ops)
