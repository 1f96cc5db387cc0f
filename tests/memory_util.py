"""Memory-store fixtures: every apply test runs on our file store and LangGraph's stores."""

from __future__ import annotations

from pathlib import Path
import sqlite3
from typing import Any

from langgraph.store.base import BaseStore
from langgraph.store.memory import InMemoryStore

from session_graph.memory import FileMemoryStore

MEMORY_BACKENDS = ["file", "inmemory", "sqlite"]


def make_memory_store(kind: str, tmp_path: Path) -> BaseStore:
    if kind == "file":
        return FileMemoryStore(tmp_path / "memory", fsync=False)
    if kind == "inmemory":
        return InMemoryStore()
    from langgraph.store.sqlite import SqliteStore

    store = SqliteStore(sqlite3.connect(tmp_path / "memory.sqlite3", check_same_thread=False, isolation_level=None))
    store.setup()
    return store


def dump_memories(store: BaseStore, *prefixes: tuple[str, ...]) -> dict[tuple[Any, ...], dict[str, Any]]:
    """Every item under the prefixes, without the fields that carry wall-clock times."""
    out = {}
    for prefix in prefixes or (("user",), ("agent",)):
        for item in store.search(prefix, limit=1_000_000):
            value = {k: v for k, v in item.value.items() if k not in ("created_at", "updated_at", "last_confirmed_at", "last_used_at")}
            out[(*item.namespace, item.key)] = value
    return out


def active(store: BaseStore, namespace: tuple[str, ...]) -> dict[str, dict[str, Any]]:
    return {i.key: i.value for i in store.search(namespace, filter={"status": "active"}, limit=100_000) if i.namespace == namespace}
