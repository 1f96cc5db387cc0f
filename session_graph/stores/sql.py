"""SQL stores: one implementation, two dialects (SQLite in WAL mode, Postgres with psycopg 3).

Two tables: ``sg_sessions`` (one row per session: the state document, version, counts) and
``sg_messages`` (one row per message: seq, id, ts, role, text, the message). A write locks
the session row (SQLite: ``BEGIN IMMEDIATE``; Postgres: ``SELECT ... FOR UPDATE``), numbers
the new messages from the stored count, inserts them and replaces the state, in one
transaction: concurrent writers lose nothing and see one order.
"""

from __future__ import annotations

from dataclasses import dataclass
import json
from pathlib import Path
import sqlite3
import threading
from typing import Any

from session_graph.errors import StoreError
from session_graph.stores.base import SCHEMA_VERSION, SearchHit, SessionInfo, Snapshot, check_key, check_schema

__all__ = ["PostgresStore", "SqliteStore"]

_TABLES = (
    "CREATE TABLE IF NOT EXISTS sg_schema (name TEXT PRIMARY KEY, version INTEGER NOT NULL)",
    "CREATE TABLE IF NOT EXISTS sg_sessions (tenant TEXT NOT NULL, key TEXT NOT NULL, state TEXT NOT NULL,"
    " version INTEGER NOT NULL, message_count INTEGER NOT NULL, created_at TEXT NOT NULL, updated_at TEXT NOT NULL,"
    " PRIMARY KEY (tenant, key))",
    "CREATE TABLE IF NOT EXISTS sg_messages (tenant TEXT NOT NULL, key TEXT NOT NULL, seq INTEGER NOT NULL,"
    " id TEXT, ts TEXT NOT NULL, role TEXT NOT NULL, text TEXT NOT NULL, data TEXT NOT NULL,"
    " PRIMARY KEY (tenant, key, seq))",
)


@dataclass(frozen=True)
class _Dialect:
    mark: str  # parameter placeholder
    begin: str | None  # statement that starts a write transaction, if the driver needs one
    lock_row: str  # suffix that locks the selected session row
    contains: str  # SQL testing that lower(text) contains a lowered parameter


class _SqlStore:
    """The shared implementation; subclasses give a connection and a dialect."""

    dialect: _Dialect

    def __init__(self, connection: Any, where: str) -> None:
        self._connection = connection
        self._where = where
        self._lock = threading.Lock()
        with self._lock:
            cursor = self._connection.cursor()
            for statement in _TABLES:
                cursor.execute(statement)
            cursor.execute(self._q("SELECT version FROM sg_schema WHERE name = ?"), ("session_graph",))
            row = cursor.fetchone()
            if row is None:
                cursor.execute(self._q("INSERT INTO sg_schema (name, version) VALUES (?, ?)"), ("session_graph", SCHEMA_VERSION))
            elif row[0] > SCHEMA_VERSION:
                self._connection.rollback()
                raise StoreError(
                    f"{where} was written by a newer session_graph (schema {row[0]}, this one reads up to "
                    f"{SCHEMA_VERSION}); upgrade session_graph to open it. Nothing was changed."
                )
            self._connection.commit()

    def _q(self, sql: str) -> str:
        return sql.replace("?", self.dialect.mark)

    def write(
        self, tenant: str, key: str, records: list[dict[str, Any]], state: dict[str, Any], *, reset: bool = False
    ) -> int:
        from session_graph.stores.codec import message_text, record_message

        check_key(tenant, "tenant"), check_key(key)
        texts = [message_text(record_message(record, self._where)) for record in records]
        with self._lock:
            cursor = self._connection.cursor()
            try:
                if self.dialect.begin:
                    cursor.execute(self.dialect.begin)
                cursor.execute(
                    self._q("INSERT INTO sg_sessions (tenant, key, state, version, message_count, created_at, updated_at)"
                            " VALUES (?, ?, ?, 0, 0, ?, ?) ON CONFLICT (tenant, key) DO NOTHING"),
                    (tenant, key, "{}", state.get("created_at", ""), state.get("updated_at", "")),
                )
                cursor.execute(
                    self._q("SELECT state, version, message_count, created_at FROM sg_sessions WHERE tenant = ? AND key = ?"
                            + self.dialect.lock_row),
                    (tenant, key),
                )
                old_state, version, count, created_at = cursor.fetchone()
                check_schema(json.loads(old_state), f"{self._where} session {key!r}")
                if reset:
                    cursor.execute(self._q("DELETE FROM sg_messages WHERE tenant = ? AND key = ?"), (tenant, key))
                    count = 0
                rows = []
                for record, text in zip(records, texts, strict=True):
                    rows.append((tenant, key, count, record.get("id"), record.get("ts", ""), record.get("role", ""),
                                 text, json.dumps(record["message"], ensure_ascii=False)))
                    count += 1
                if rows:
                    cursor.executemany(
                        self._q("INSERT INTO sg_messages (tenant, key, seq, id, ts, role, text, data) VALUES (?, ?, ?, ?, ?, ?, ?, ?)"),
                        rows,
                    )
                document = {**state, "key": key, "tenant": tenant, "message_count": count, "created_at": created_at}
                cursor.execute(
                    self._q("UPDATE sg_sessions SET state = ?, version = ?, message_count = ?, updated_at = ?"
                            " WHERE tenant = ? AND key = ?"),
                    (json.dumps(document, ensure_ascii=False), version + 1, count, state.get("updated_at", ""), tenant, key),
                )
                self._connection.commit()
            except BaseException:
                self._connection.rollback()
                raise
            return version + 1

    def read(self, tenant: str, key: str) -> Snapshot | None:
        with self._lock:
            cursor = self._connection.cursor()
            cursor.execute(self._q("SELECT state, version FROM sg_sessions WHERE tenant = ? AND key = ?"), (tenant, check_key(key)))
            row = cursor.fetchone()
            if row is None:
                self._connection.commit()
                return None
            cursor.execute(
                self._q("SELECT seq, id, ts, role, data FROM sg_messages WHERE tenant = ? AND key = ? ORDER BY seq"), (tenant, key)
            )
            records = [{"seq": seq, "id": id_, "ts": ts, "role": role, "message": json.loads(data)}
                       for seq, id_, ts, role, data in cursor.fetchall()]
            self._connection.commit()
        state = check_schema(json.loads(row[0]), f"{self._where} session {key!r}")
        return Snapshot(key, state, records, int(row[1]))

    def version(self, tenant: str, key: str) -> int | None:
        with self._lock:
            cursor = self._connection.cursor()
            cursor.execute(self._q("SELECT version FROM sg_sessions WHERE tenant = ? AND key = ?"), (tenant, key))
            row = cursor.fetchone()
            self._connection.commit()
        return None if row is None else int(row[0])

    def delete(self, tenant: str, key: str) -> bool:
        with self._lock:
            cursor = self._connection.cursor()
            cursor.execute(self._q("DELETE FROM sg_messages WHERE tenant = ? AND key = ?"), (tenant, key))
            cursor.execute(self._q("DELETE FROM sg_sessions WHERE tenant = ? AND key = ?"), (tenant, key))
            found = cursor.rowcount > 0
            self._connection.commit()
        return found

    def list(self, tenant: str) -> list[SessionInfo]:
        with self._lock:
            cursor = self._connection.cursor()
            cursor.execute(
                self._q("SELECT key, created_at, updated_at, message_count, state FROM sg_sessions WHERE tenant = ?"
                        " ORDER BY updated_at DESC"),
                (tenant,),
            )
            rows = cursor.fetchall()
            self._connection.commit()
        return [SessionInfo(k, c, u, int(n), dict(json.loads(s).get("metadata") or {})) for k, c, u, n, s in rows]

    def search(self, tenant: str, text: str, limit: int = 100) -> list[SearchHit]:
        with self._lock:
            cursor = self._connection.cursor()
            cursor.execute(
                self._q(f"SELECT key, seq, role, text, ts FROM sg_messages WHERE tenant = ? AND {self.dialect.contains}"
                        " ORDER BY key, seq LIMIT ?"),
                (tenant, text.lower(), limit),
            )
            rows = cursor.fetchall()
            self._connection.commit()
        return [SearchHit(k, int(s), r, t, ts) for k, s, r, t, ts in rows]

    def close(self) -> None:
        with self._lock:
            self._connection.close()


class SqliteStore(_SqlStore):
    """Sessions in one SQLite file (standard library, WAL mode, safe across processes)."""

    dialect = _Dialect(mark="?", begin="BEGIN IMMEDIATE", lock_row="", contains="instr(lower(text), ?) > 0")

    def __init__(self, path: str | Path = ".session_graph.sqlite3", *, timeout: float = 30.0) -> None:
        target = Path(path)
        if target.is_dir():
            raise StoreError(f"{target} is a directory; a SQLite store needs a file path.")
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            connection = sqlite3.connect(target, timeout=timeout, isolation_level=None, check_same_thread=False)
            connection.execute("PRAGMA journal_mode=WAL")
            connection.execute(f"PRAGMA busy_timeout={int(timeout * 1000)}")
        except (OSError, sqlite3.Error) as error:
            raise StoreError(f"cannot open the SQLite store {target}: {error}") from error
        super().__init__(connection, str(target))


class PostgresStore(_SqlStore):
    """Sessions in Postgres (psycopg 3), for many processes or machines.

    Args:
        dsn: a libpq connection string, e.g. ``postgresql://user@host:5432/db``.
        connect_timeout: seconds before an unreachable server is reported.
    """

    dialect = _Dialect(mark="%s", begin=None, lock_row=" FOR UPDATE", contains="strpos(lower(text), %s) > 0")

    def __init__(self, dsn: str, *, connect_timeout: int = 5) -> None:
        try:
            import psycopg
        except ImportError as error:  # pragma: no cover - depends on the install
            raise StoreError("the Postgres store needs psycopg 3: pip install 'session_graph[postgres]'") from error
        try:
            connection = psycopg.connect(dsn, connect_timeout=connect_timeout)
        except psycopg.Error as error:
            raise StoreError(f"cannot reach Postgres at {_redact(dsn)}: {str(error).strip()}") from error
        super().__init__(connection, _redact(dsn))


def _redact(dsn: str) -> str:
    """A DSN without its password, for messages."""
    if "@" in dsn and "://" in dsn:
        scheme, rest = dsn.split("://", 1)
        credentials, host = rest.rsplit("@", 1)
        return f"{scheme}://{credentials.split(':', 1)[0]}@{host}"
    return dsn
