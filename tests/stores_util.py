"""Store fixtures shared by the conformance suite: every test runs on every backend."""

from __future__ import annotations

import json
import os
from pathlib import Path
import uuid

import pytest

from session_graph.stores import JsonlStore, PostgresStore, SessionStore, SqliteStore

BACKENDS = ["jsonl", "sqlite", "postgres"]


def postgres_dsn() -> str:
    dsn = os.environ.get("SESSION_GRAPH_PG_DSN")
    if not dsn:
        if os.environ.get("CI"):
            pytest.fail("CI must run the Postgres store tests: .ci/run starts a server and sets SESSION_GRAPH_PG_DSN.")
        pytest.skip("no Postgres server given: set SESSION_GRAPH_PG_DSN (bash .ci/postgres.sh starts one)")
    return dsn


def make_store(kind: str, tmp_path: Path) -> SessionStore:
    if kind == "jsonl":
        return JsonlStore(tmp_path / "jsonl")
    if kind == "sqlite":
        return SqliteStore(tmp_path / "store.sqlite3")
    return PostgresStore(postgres_dsn())


def store_spec(kind: str, tmp_path: Path) -> str:
    """What another process passes to open_store for the same store."""
    return {"jsonl": str(tmp_path / "jsonl"), "sqlite": str(tmp_path / "store.sqlite3")}.get(kind) or postgres_dsn()


def fresh_tenant() -> str:
    return f"t-{uuid.uuid4().hex[:12]}"  # Postgres is shared between tests: a tenant each


def hand_message(message_id: str) -> dict[str, object]:
    """A human message as another tool writing the stores' format would store it (not this library's encoder)."""
    return {"type": "human", "data": {"content": f"text of {message_id}", "type": "human", "id": message_id}}


def hand_record(message_id: str, seq: int) -> bytes:
    """A JSONL record line of ``hand_message``, appended behind the store's back."""
    line = {"id": message_id, "ts": "2026-01-01T00:00:00Z", "role": "user", "message": hand_message(message_id), "seq": seq}
    return json.dumps(line).encode() + b"\n"
