"""SQL stores: one implementation, two dialects (SQLite in WAL mode here; Postgres with psycopg 3
in ``stores.postgres``).

Two tables: ``sg_sessions`` (one row per session: the state document, version, counts) and
``sg_messages`` (one row per message: seq, id, ts, role, text, the message). An ``update``
locks the session row (SQLite: ``BEGIN IMMEDIATE``; Postgres: ``SELECT ... FOR UPDATE``,
on a placeholder row for a new key), hands the caller's function what is stored, numbers
the new messages from the stored count, inserts them and replaces the state, in one
transaction: concurrent writers lose nothing and see one order.

Every operation is written once, as a generator of SQL steps (``_Exec``); a sync driver runs
it on a connection, an async driver on an async one (Postgres: psycopg's async pool), so
sync and async share one implementation.
"""

from __future__ import annotations

from dataclasses import dataclass
import functools
from pathlib import Path
import sqlite3
import threading
from typing import Any

from session_graph.errors import StoreError
from session_graph.stores.base import (
    SCHEMA_VERSION,
    SearchHit,
    SessionInfo,
    Snapshot,
    StoreBase,
    StoredSession,
    UpdateFn,
    check_change,
    check_key,
    check_schema,
    resets,
)
from session_graph.stores.records import PackedRecords, PackedRows, RowRecords
from session_graph.stores.search_sql import SQLITE_SEARCH, SqlSearch, SqlSearchDialect
from session_graph.stores.sql_steps import Exec as _Exec
from session_graph.stores.sql_steps import Flow
from session_graph.stores.sql_steps import json_text as _text
from session_graph.stores.sql_steps import loads as _loads
from session_graph.stores.sql_steps import stored_json as _json

__all__ = ["Dialect", "Flow", "SqlStore", "SqliteStore", "adrive_sql", "drive_sql"]

_TABLES = (
    "CREATE TABLE IF NOT EXISTS sg_schema (name TEXT PRIMARY KEY, version INTEGER NOT NULL)",
    "CREATE TABLE IF NOT EXISTS sg_sessions (tenant TEXT NOT NULL, key TEXT NOT NULL, state TEXT NOT NULL,"
    " version INTEGER NOT NULL, message_count INTEGER NOT NULL, created_at TEXT NOT NULL, updated_at TEXT NOT NULL,"
    " PRIMARY KEY (tenant, key))",
    "CREATE TABLE IF NOT EXISTS sg_messages (tenant TEXT NOT NULL, key TEXT NOT NULL, seq INTEGER NOT NULL,"
    " id TEXT, ts TEXT NOT NULL, role TEXT NOT NULL, text TEXT NOT NULL, data TEXT NOT NULL,"
    " PRIMARY KEY (tenant, key, seq))",
)

_END = (" (SELECT COALESCE(MAX(m.seq) + 1, 0) FROM sg_messages m WHERE m.tenant = sg_sessions.tenant"
        " AND m.key = sg_sessions.key)")
"""The seq after the session's last message row: above its ``message_count`` when rows were added
behind the store's back (by hand, another tool). Those rows move the version (by how many seqs
they add: each row a number no state of the session is written with, as a write on top of them
numbers itself above them) and the count, so a save merges them as another writer's (one index
seek on the primary key, in the statement that reads the session row)."""


def _after(count: Any, end: Any) -> int:
    """How many seqs the message rows run past the session's count (rows added behind its back)."""
    return max(0, int(end or 0) - int(count))


@dataclass(frozen=True)
class Dialect:
    mark: str  # parameter placeholder
    begin: str | None  # statement that starts a write transaction, if the driver needs one
    lock_row: str  # suffix that locks the selected session row
    contains: str  # SQL testing that lower(text) contains a lowered parameter
    has_table: str  # a query whose first column is NULL when sg_sessions does not exist


def drive_sql(cursor: Any, flow: Flow) -> Any:
    """Run an operation's steps on a sync cursor; returns the operation's result."""
    reply = None
    while True:
        try:
            step = flow.send(reply)
        except StopIteration as stop:
            return stop.value
        if step.many:
            cursor.executemany(step.sql, step.params)
        else:
            cursor.execute(step.sql, step.params)
        if step.fetch == "packed":
            reply = PackedRows()
            for row in cursor:
                reply.add(row)
        else:
            reply = cursor.fetchone() if step.fetch == "one" else cursor.fetchall() if step.fetch == "all" else None


async def adrive_sql(cursor: Any, flow: Flow) -> Any:
    """Run an operation's steps on an async cursor (the same steps as ``drive_sql``)."""
    reply = None
    while True:
        try:
            step = flow.send(reply)
        except StopIteration as stop:
            return stop.value
        if step.many:
            await cursor.executemany(step.sql, step.params)
        else:
            await cursor.execute(step.sql, step.params)
        if step.fetch == "packed":
            reply = PackedRows()
            async for row in cursor:
                reply.add(row)
        else:
            reply = await cursor.fetchone() if step.fetch == "one" else await cursor.fetchall() if step.fetch == "all" else None


class SqlStore(StoreBase):
    """The shared implementation; subclasses give connections and a dialect."""

    dialect: Dialect
    search_dialect: SqlSearchDialect  # how this database keeps and ranks search rows (stores.search_sql)
    _where: str
    _empty = False  # opened for reading with no tables yet: reads find nothing, writes are refused

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._where!r})"

    @functools.cached_property
    def search_index(self) -> SqlSearch:
        """Ranked search, inside the database (``stores.search_sql``)."""
        return SqlSearch(self)

    def _q(self, sql: str) -> str:
        return sql.replace("?", self.dialect.mark)

    def _x(self, sql: str, params: Any = (), fetch: str = "") -> _Exec:
        return _Exec(self._q(sql), params, fetch)

    def _run(self, flow: Flow) -> Any:
        """Run one operation as one transaction (subclasses give the connection)."""
        raise NotImplementedError

    # -- operations, each written once ----------------------------------------------------------
    def _setup_flow(self, create: bool) -> Flow:
        if not create:
            found = yield _Exec(self.dialect.has_table, (), "one")
            if found is None or found[0] is None:
                self._empty = True
                return
        else:
            for statement in _TABLES:
                yield _Exec(statement)
        row = yield self._x("SELECT version FROM sg_schema WHERE name = ?", ("session_graph",), "one")
        if row is None:
            yield self._x("INSERT INTO sg_schema (name, version) VALUES (?, ?)", ("session_graph", SCHEMA_VERSION))
        elif row[0] > SCHEMA_VERSION:
            raise StoreError(
                f"{self._where} was written by a newer session_graph (schema {row[0]}, this one reads up to "
                f"{SCHEMA_VERSION}); upgrade session_graph to open it. Nothing was changed."
            )
        if create:
            yield from self.search_index.setup_flow()

    def _update_flow(self, tenant: str, key: str, fn: UpdateFn, since: int | None) -> Flow:
        from session_graph.stores.codec import message_text, record_message

        check_key(tenant, "tenant"), check_key(key)
        where = f"{self._where} session {key!r}"
        if self.dialect.begin:
            yield _Exec(self.dialect.begin)
        yield self._x(  # a placeholder row to lock when the key is new (deleted again if nothing is written)
            "INSERT INTO sg_sessions (tenant, key, state, version, message_count, created_at, updated_at)"
            " VALUES (?, ?, '{}', 0, 0, '', '') ON CONFLICT (tenant, key) DO NOTHING",
            (tenant, key),
        )
        old_state, version, count, created_at, end = yield self._x(
            f"SELECT state, version, message_count, created_at,{_END} FROM sg_sessions WHERE tenant = ? AND key = ?"
            + self.dialect.lock_row,
            (tenant, key),
            "one",
        )
        after = _after(count, end)  # rows added behind the store's back: counted in, the version moved
        version, count = int(version) + after, int(count) + after
        stored = check_schema(_json(old_state, where), where) if version else None
        records = []
        if since is not None and since < count:
            rows = yield self._x("SELECT seq, id, ts, role, data FROM sg_messages WHERE tenant = ? AND key = ? AND seq >= ?"
                                 " ORDER BY seq", (tenant, key, since), "all")
            records = list(self._records(rows, key))
        change = check_change(fn(StoredSession(key, stored, version, count, records)), fn)
        if change is None:
            if not version:
                yield self._x("DELETE FROM sg_sessions WHERE tenant = ? AND key = ?", (tenant, key))
            return version
        state = change.state
        if change.reset:
            yield self._x("DELETE FROM sg_messages WHERE tenant = ? AND key = ?", (tenant, key))
            yield from self.search_index.drop_flow(tenant, key)
            count = 0
        yield from self.search_index.insert_flow(tenant, key, count, change.records)
        rows = []
        for record in change.records:
            text = message_text(record_message(record, self._where)).replace("\x00", "")  # search text; the data keeps it
            rows.append((tenant, key, count, record.get("id"), record.get("ts", ""), record.get("role", ""),
                         text, _text(record["message"])))
            count += 1
        if rows:
            yield _Exec(self._q("INSERT INTO sg_messages (tenant, key, seq, id, ts, role, text, data) VALUES (?, ?, ?, ?, ?, ?, ?, ?)"),
                        rows, many=True)
        created_at = created_at or str(state.get("created_at", ""))
        document = {**state, "key": key, "tenant": tenant, "message_count": count, "created_at": created_at,
                    "resets": resets(stored) + change.reset}
        yield self._x(
            "UPDATE sg_sessions SET state = ?, version = ?, message_count = ?, created_at = ?, updated_at = ?"
            " WHERE tenant = ? AND key = ?",
            (_text(document), version + 1, count, created_at, state.get("updated_at", ""), tenant, key),
        )
        return version + 1

    def _read_flow(self, tenant: str, key: str, since: int = 0, window: bool = False) -> Flow:
        row = yield self._x(f"SELECT state, version, message_count,{_END} FROM sg_sessions WHERE tenant = ? AND key = ?",
                            (tenant, check_key(key)), "one")
        if row is None:
            return None
        where = f"{self._where} session {key!r}"
        state = check_schema(_json(row[0], where), where)
        after = _after(row[2], row[3])  # rows added behind the store's back: in the version; read whole (their window)
        start = int(state.get("window_start", 0) or 0) if window and not after else 0
        if start >= 2:  # record 0 (a system prompt) and the window on: what a lazy load needs
            rows = yield self._x("SELECT seq, id, ts, role, data FROM sg_messages WHERE tenant = ? AND key = ?"
                                 " AND (seq = 0 OR seq >= ?) ORDER BY seq", (tenant, key, start), "packed")
        else:
            rows = yield self._x("SELECT seq, id, ts, role, data FROM sg_messages WHERE tenant = ? AND key = ? AND seq >= ?"
                                 " ORDER BY seq", (tenant, key, since), "packed")
        records = self._packed(rows, key)
        return Snapshot(key, state, records, int(row[1]) + after)

    def _ids_flow(self, tenant: str, key: str, start: int, stop: int) -> Flow:
        rows = yield self._x("SELECT id FROM sg_messages WHERE tenant = ? AND key = ? AND seq >= ? AND seq < ? ORDER BY seq",
                             (tenant, key, start, stop), "all")
        return [r[0] for r in rows]

    def _packed(self, packed: PackedRows, key: str) -> PackedRecords:
        """Packed rows as records, each decoded when read (``stores.records``: the JSON texts sit in
        one buffer, never as 100,000 strings at once, and a load makes each message before the
        next record is decoded)."""
        where = f"{self._where} session {key!r}"

        def record(head: Any, text: memoryview) -> dict[str, Any]:
            seq, id_, ts, role = head
            try:
                message = _loads(text)
            except (ValueError, TypeError):  # orjson is stricter than the json module (NaN): let it decide, or name the row
                message = _json(bytes(text).decode("utf-8", "surrogatepass"), f"{where} message {seq}")
            return {"seq": seq, "id": id_, "ts": ts, "role": role, "message": message}

        return PackedRecords(packed, record)

    def _records(self, rows: list[Any], key: str) -> RowRecords:
        """The rows as records, each decoded when read (``stores.records``: a load makes each
        message before the next row is decoded, so no list of every record is ever held)."""
        where = f"{self._where} session {key!r}"

        def record(row: Any) -> dict[str, Any]:
            seq, id_, ts, role, data = row
            return {"seq": seq, "id": id_, "ts": ts, "role": role, "message": _json(data, f"{where} message {seq}")}

        return RowRecords(rows if isinstance(rows, list) else list(rows), record)

    def _version_flow(self, tenant: str, key: str) -> Flow:
        row = yield self._x(f"SELECT version, message_count,{_END} FROM sg_sessions WHERE tenant = ? AND key = ?", (tenant, key), "one")
        return None if row is None else int(row[0]) + _after(row[1], row[2])

    def _delete_flow(self, tenant: str, key: str) -> Flow:
        yield self._x("DELETE FROM sg_messages WHERE tenant = ? AND key = ?", (tenant, key))
        yield from self.search_index.drop_flow(tenant, key)
        found = yield self._x("DELETE FROM sg_sessions WHERE tenant = ? AND key = ? RETURNING key", (tenant, key), "one")
        return found is not None

    def _list_flow(self, tenant: str) -> Flow:
        rows = yield self._x(
            f"SELECT key, created_at, updated_at, message_count, state,{_END} FROM sg_sessions WHERE tenant = ?"
            " ORDER BY updated_at DESC", (tenant,), "all",
        )
        return [SessionInfo(k, c, u, max(int(n), int(e)), dict(_json(s, f"{self._where} session {k!r}").get("metadata") or {}))
                for k, c, u, n, s, e in rows]  # max: the count with rows added behind its back (_END)

    def _search_flow(self, tenant: str, text: str, limit: int) -> Flow:
        rows = yield self._x(
            f"SELECT key, seq, role, text, ts FROM sg_messages WHERE tenant = ? AND {self.dialect.contains}"
            " ORDER BY key, seq LIMIT ?",
            (tenant, text.lower(), limit), "all",
        )
        return [SearchHit(k, int(s), r, t, ts) for k, s, r, t, ts in rows]

    # -- the protocol ---------------------------------------------------------------------------
    def update(self, tenant: str, key: str, fn: UpdateFn, *, since: int | None = None) -> int:
        """Run ``fn`` on the stored session inside one write transaction and write its change (see ``SessionStore.update``)."""
        self._writable()
        return self._run(self._update_flow(tenant, key, fn, since))

    reads_windows = True  # read(window=True): record 0 and the records from the state's window_start on

    def read(self, tenant: str, key: str, *, since: int = 0, window: bool = False) -> Snapshot | None:
        """The stored session, or None; ``since``: records from that ``seq`` on; ``window``: record 0 and the records from the window on."""
        return None if self._empty else self._run(self._read_flow(tenant, key, since, window))

    def ids(self, tenant: str, key: str, start: int, stop: int) -> list[str | None]:
        """The ids of the records ``start .. stop - 1`` without reading their messages."""
        return [] if self._empty else self._run(self._ids_flow(tenant, key, start, stop))

    def version(self, tenant: str, key: str) -> int | None:
        """The stored version, read cheaply, or None if the session is not stored."""
        return None if self._empty else self._run(self._version_flow(tenant, key))

    def delete(self, tenant: str, key: str) -> bool:
        """Remove a session and its messages; False if there was none."""
        return False if self._empty else self._run(self._delete_flow(tenant, key))

    def list(self, tenant: str) -> list[SessionInfo]:
        """Every session of a tenant, newest ``updated_at`` first."""
        return [] if self._empty else self._run(self._list_flow(tenant))

    def search(self, tenant: str, text: str, limit: int = 100) -> list[SearchHit]:
        """Messages of a tenant containing ``text`` (case-insensitive), at most ``limit``."""
        return [] if self._empty else self._run(self._search_flow(tenant, text, limit))

    def _writable(self) -> None:
        if self._empty:
            raise StoreError(f"{self._where} was opened for reading and has no session tables; nothing was written.")


class SqliteStore(SqlStore):
    """Sessions in one SQLite file (standard library, WAL mode, safe across processes).

    Its async methods run the sync ones in a worker thread (SQLite has no async driver).
    """

    search_dialect = SQLITE_SEARCH
    dialect = Dialect(mark="?", begin="BEGIN IMMEDIATE", lock_row="", contains="instr(lower(text), ?) > 0",
                       has_table="SELECT name FROM sqlite_master WHERE type = 'table' AND name = 'sg_sessions'")

    def __init__(self, path: str | Path = ".session_graph.sqlite3", *, timeout: float = 30.0, create: bool = True) -> None:
        target = Path(path)
        if target.is_dir():
            raise StoreError(f"{target} is a directory; a SQLite store needs a file path.")
        if not create and not target.is_file():
            raise StoreError(f"there is no SQLite store at {target} (no such file); nothing was created.")
        try:
            if create:
                target.parent.mkdir(parents=True, exist_ok=True)
            connection = sqlite3.connect(target, timeout=timeout, isolation_level=None, check_same_thread=False)
            connection.execute("PRAGMA journal_mode=WAL")
            connection.execute(f"PRAGMA busy_timeout={int(timeout * 1000)}")
        except (OSError, sqlite3.Error) as error:
            raise StoreError(f"cannot open the SQLite store {target}: {error}") from error
        self._connection = connection
        self._where = str(target)
        self._lock = threading.Lock()
        self._run(self._setup_flow(create))

    def _run(self, flow: Flow) -> Any:
        with self._lock:
            cursor = self._connection.cursor()
            try:
                result = drive_sql(cursor, flow)
            except BaseException:
                if self._connection.in_transaction:
                    self._connection.rollback()
                raise
            if self._connection.in_transaction:
                self._connection.commit()
            return result

    def close(self) -> None:
        """Close the database connection."""
        with self._lock:
            self._connection.close()
