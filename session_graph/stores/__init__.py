"""Persistence: the SessionStore protocol, its backends and the SessionManager."""

from session_graph.stores.base import (
    SearchHit,
    SessionInfo,
    SessionStore,
    Snapshot,
    StoreBase,
    StoreChange,
    StoredSession,
)
from session_graph.stores.formats import SessionStats
from session_graph.stores.jsonl import JsonlStore
from session_graph.stores.manager import SessionManager, open_store
from session_graph.stores.postgres import PostgresStore
from session_graph.stores.sql import SqliteStore

__all__ = [
    "JsonlStore",
    "PostgresStore",
    "SearchHit",
    "SessionInfo",
    "SessionManager",
    "SessionStats",
    "SessionStore",
    "Snapshot",
    "SqliteStore",
    "StoreBase",
    "StoreChange",
    "StoredSession",
    "open_store",
]
