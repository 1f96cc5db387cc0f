"""Search indexes inside the SQL stores: ranking happens in the database.

- SQLite: an FTS5 table ``sg_search`` (columns ``scope``, ``terms`` and the message's tenant,
  key and seq, unindexed), ranked by FTS5's ``bm25()``. ``terms`` holds the retrieval terms
  (``retrieval.tokenize``: stems, CJK characters and bigrams, date tokens) separated by
  spaces, so FTS5's ``unicode61`` tokenizer splits exactly where ours did and CJK works.
  Each term is prefixed with a token of the tenant, so a tenant's terms are its own (its own
  statistics, and no tenant-wide list to intersect per query); ``scope`` holds a token of the
  session, so a search of some sessions is limited inside the full-text match itself.
- Postgres: a table ``sg_search`` with a ``tsvector`` of the same terms (``simple``
  configuration: no second stemming) and a GIN index; a query is ranked in the database by
  the sum over its terms of the term's idf (from GIN counts among the tenant's messages) times
  ``ts_rank`` of the term (its frequency, normalised by the message's length): ``ts_rank_cd``
  alone has no idf and ranks a common word like a rare name.

Rows are written in the transaction that appends the messages (O(new messages)), dropped
with them on ``reset`` and ``delete``. At open, an index made by another tokenizer version, or
one that does not hold a row per message (messages written by an older session_graph), is
rebuilt once.
"""

from __future__ import annotations

import hashlib
import json
import math
import threading
import time
from typing import Any, Protocol

from session_graph.retrieval.hits import SearchHit
from session_graph.retrieval.tokenize import TOKENIZER, terms
from session_graph.stores.search_index import record_text
from session_graph.stores.sql_steps import Exec, Flow, stored_json


class SearchedStore(Protocol):
    """What the index reads of its SQL store (``stores.sql.SqlStore``; typed here, since the store imports this module)."""

    search_dialect: SqlSearchDialect
    dialect: Any
    _empty: bool
    _where: str

    def _run(self, flow: Flow) -> Any: ...

    def _x(self, sql: str, params: Any = (), fetch: str = "") -> Exec: ...

__all__ = ["POSTGRES_SEARCH", "SQLITE_SEARCH", "SqlSearch", "SqlSearchDialect"]

Ref = tuple[str, int]
_DF_SECONDS = 60.0


class SqlSearchDialect:
    """How one database keeps and ranks the search rows."""

    def __init__(self, name: str, tables: tuple[str, ...], insert: str, drop_session: str, rank: str) -> None:
        self.name, self.tables, self.insert, self.drop_session, self.rank = name, tables, insert, drop_session, rank

    def match(self, tenant: str, words: list[str], keys: list[str] | None) -> str:
        raise NotImplementedError

    def scope(self, tenant: str, key: str) -> str:
        return ""


def _token(*parts: str) -> str:
    return hashlib.sha1("\x00".join(parts).encode()).hexdigest()[:20]


class _Sqlite(SqlSearchDialect):
    def scope(self, tenant: str, key: str) -> str:
        return f"k{_token(tenant, key)}"

    def words(self, tenant: str, words: list[str]) -> str:
        """Terms as indexed: each prefixed with the tenant's token, so a tenant's terms are its own
        (its own document frequencies, no intersection with a tenant-wide list per query)."""
        prefix = f"t{_token(tenant)[:12]}x"
        return " ".join(prefix + w for w in words)

    def match(self, tenant: str, words: list[str], keys: list[str] | None) -> str:
        query = "terms : (" + " OR ".join(f'"{w}"' for w in self.words(tenant, words).split()) + ")"
        if keys is not None:
            query = "scope : (" + " OR ".join(f"k{_token(tenant, k)}" for k in keys) + ") AND " + query
        return query


class _Postgres(SqlSearchDialect):
    def match(self, tenant: str, words: list[str], keys: list[str] | None) -> str:
        return " | ".join(f"'{w}'" for w in words)


SQLITE_SEARCH = _Sqlite(
    "sqlite",
    ("CREATE VIRTUAL TABLE IF NOT EXISTS sg_search USING fts5(scope, terms, tenant UNINDEXED, key UNINDEXED,"
     " seq UNINDEXED, tokenize = 'unicode61 remove_diacritics 0')",),
    "INSERT INTO sg_search (scope, terms, tenant, key, seq) VALUES (?, ?, ?, ?, ?)",
    "DELETE FROM sg_search WHERE sg_search MATCH ?",
    # ORDER BY bm25() alone (no other sort key, no filter on a column): FTS5 then ranks inside the
    # index and reads only the rows returned; the tenant is checked on those (see _rank_flow)
    "SELECT s.key, s.seq, -bm25(sg_search, 0.0, 1.0, 0.0, 0.0, 0.0) AS score, s.tenant FROM sg_search s"
    "{join} WHERE sg_search MATCH ?{where} ORDER BY bm25(sg_search, 0.0, 1.0, 0.0, 0.0, 0.0) LIMIT ?",
)
POSTGRES_SEARCH = _Postgres(
    "postgres",
    ("CREATE TABLE IF NOT EXISTS sg_search (tenant TEXT NOT NULL, key TEXT NOT NULL, seq INTEGER NOT NULL,"
     " terms tsvector NOT NULL, PRIMARY KEY (tenant, key, seq))",
     "CREATE INDEX IF NOT EXISTS sg_search_terms ON sg_search USING GIN (terms)"),
    "INSERT INTO sg_search (tenant, key, seq, terms) VALUES (%s, %s, %s, to_tsvector('simple', %s))",
    "DELETE FROM sg_search WHERE tenant = %s AND key = %s",
    "SELECT s.key, s.seq, {score} AS score FROM sg_search s{join}, to_tsquery('simple', %s) q"
    " WHERE s.tenant = %s AND s.terms @@ q{where} ORDER BY score DESC, s.key, s.seq LIMIT %s",
)


class SqlSearch:
    """Ranked search over a SQL store's ``sg_search`` rows (the store's ``search_index``)."""

    def __init__(self, store: SearchedStore) -> None:
        self.store = store
        self.dialect: SqlSearchDialect = store.search_dialect
        self._df: dict[tuple[str, str], tuple[int, float]] = {}  # (tenant, term) -> (messages with it, when counted)
        self._df_lock = threading.Lock()

    # -- flows the store's own operations run -----------------------------------------------------
    def setup_flow(self) -> Flow:
        """Create the index; rebuild it when another tokenizer made it or rows are missing."""

        store = self.store
        for statement in self.dialect.tables:
            yield Exec(statement)
        marker = f"search:{TOKENIZER}:{self.dialect.name}-2"
        row = yield store._x("SELECT version FROM sg_schema WHERE name = ?", (marker,), "one")
        counts = yield Exec("SELECT (SELECT count(*) FROM sg_messages), (SELECT count(*) FROM sg_search)", (), "one")
        if row is not None and int(counts[0]) == int(counts[1]):
            return
        yield Exec("DELETE FROM sg_search")
        rows = yield Exec("SELECT tenant, key, seq, data FROM sg_messages", (), "all")
        batch = [self._row(t, k, int(s), {"message": json.loads(d)}) for t, k, s, d in rows]
        if batch:
            yield Exec(self.dialect.insert, batch, many=True)
        yield store._x("DELETE FROM sg_schema WHERE name LIKE ?", ("search:%",))
        yield store._x("INSERT INTO sg_schema (name, version) VALUES (?, ?)", (marker, 1))

    def insert_flow(self, tenant: str, key: str, first: int, records: list[dict[str, Any]]) -> Flow:
        """Index records appended to a session from seq ``first`` on (in the append's transaction)."""

        if records:
            yield Exec(self.dialect.insert, [self._row(tenant, key, first + i, r) for i, r in enumerate(records)], many=True)

    def drop_flow(self, tenant: str, key: str) -> Flow:
        """Drop a session's rows (its messages were reset or deleted)."""

        if self.dialect.name == "sqlite":
            yield Exec(self.dialect.drop_session, (f"scope : k{_token(tenant, key)}",))
        else:
            yield Exec(self.dialect.drop_session, (tenant, key))

    def _row(self, tenant: str, key: str, seq: int, record: dict[str, Any]) -> tuple[Any, ...]:
        found = terms(record_text(record))
        if isinstance(self.dialect, _Sqlite):
            return (self.dialect.scope(tenant, key), self.dialect.words(tenant, found), tenant, key, seq)
        return (tenant, key, seq, " ".join(found))

    # -- searching --------------------------------------------------------------------------------
    def _rank_flow(self, tenant: str, words: list[str], limit: int, keys: list[str] | None,
                   since: str | None, until: str | None) -> Flow:

        if not words or (keys is not None and not keys):
            return []
        mark = self.store.dialect.mark
        where, params = "", []
        if keys is not None and self.dialect.name != "sqlite":
            where += f" AND s.key IN ({', '.join([mark] * len(keys))})"
            params.extend(keys)
        if since is not None:
            where += f" AND m.ts >= {mark}"
            params.append(since)
        if until is not None:
            where += f" AND m.ts < {mark}"
            params.append(until)
        join = " JOIN sg_messages m ON m.tenant = s.tenant AND m.key = s.key AND m.seq = s.seq" if since or until else ""
        sql = self.dialect.rank.replace("{join}", join).replace("{where}", where)
        query = self.dialect.match(tenant, words, keys)
        if self.dialect.name == "sqlite":
            found = yield Exec(sql, (query, *params, limit), "all")
            rows = [row[:3] for row in found if row[3] == tenant]  # a tenant-token collision never leaks a message
            rows.sort(key=lambda row: (-row[2], row[0], row[1]))  # ties by key, as the other stores
        else:
            weights, total = yield from self._idf_flow(tenant, words)
            if not weights:
                return []
            score = " + ".join("%s * ts_rank(s.terms, to_tsquery('simple', %s), 1)" for _ in weights)
            sql = sql.replace("{score}", score)
            terms_params = [v for word, idf, _ in weights for v in (idf, f"'{word}'")]
            # match on the selective terms only, when there are some: a message with none of them
            # could only rank on common words, and scoring every such row is what costs
            rare = [w for w, _, df in weights if df <= max(50, total // 20)]
            query = self.dialect.match(tenant, rare or [w for w, _, _ in weights], keys)
            rows = yield Exec(sql, (*terms_params, query, tenant, *params, limit), "all")
            if rare and len(rare) < len(weights) and not rows:  # none (a time or session filter): every term
                query = self.dialect.match(tenant, [w for w, _, _ in weights], keys)
                rows = yield Exec(sql, (*terms_params, query, tenant, *params, limit), "all")
        return [((k, int(s)), float(score)) for k, s, score in rows]

    def _idf_flow(self, tenant: str, words: list[str]) -> Flow:
        """Postgres: each query term's BM25 idf among the tenant's messages (GIN counts), since
        ``ts_rank`` alone weighs a common word like a rare name; terms no message has are dropped.

        Counting a common term's messages is the slow part of a query (a bitmap heap scan of
        all of them), so counts are kept for ``_DF_SECONDS`` per (tenant, term) in the process:
        a document frequency a minute old ranks as well as an exact one.
        """

        now = time.monotonic()
        with self._df_lock:
            known = {w: self._df[(tenant, w)][0] for w in words
                     if (tenant, w) in self._df and now - self._df[(tenant, w)][1] < _DF_SECONDS}
        missing = [w for w in words if w not in known]
        counts = "".join(", (SELECT count(*) FROM sg_search WHERE tenant = %s AND terms @@ to_tsquery('simple', %s))"
                         for _ in missing)
        row = yield Exec(f"SELECT (SELECT COALESCE(sum(message_count), 0) FROM sg_sessions WHERE tenant = %s){counts}",
                          (tenant, *[v for w in missing for v in (tenant, f"'{w}'")]), "one")
        total = max(int(row[0]), 1)
        with self._df_lock:
            for word, df in zip(missing, row[1:], strict=True):
                known[word] = int(df)
                self._df[(tenant, word)] = (int(df), now)
            if len(self._df) > 100_000:
                self._df.clear()
        return [(w, math.log(1 + (total - known[w] + 0.5) / (known[w] + 0.5)), known[w]) for w in words if known[w]], total

    def rank(self, tenant: str, words: list[str], limit: int, *, keys: list[str] | None = None,
             since: str | None = None, until: str | None = None) -> list[tuple[Ref, float]]:
        """The best ``limit`` (``(key, seq)``, score) of a tenant's messages, ranked by the database."""
        if self.store._empty:
            return []
        return self.store._run(self._rank_flow(tenant, words, limit, keys, since, until))

    async def arank(self, tenant: str, words: list[str], limit: int, *, keys: list[str] | None = None,
                    since: str | None = None, until: str | None = None) -> list[tuple[Ref, float]]:
        """Async twin of ``rank`` (native on Postgres, a worker thread on SQLite)."""
        runner = getattr(self.store, "_aquery", None)
        if runner is not None:
            return await runner([], self._rank_flow(tenant, words, limit, keys, since, until))
        import asyncio

        return await asyncio.to_thread(self.rank, tenant, words, limit, keys=keys, since=since, until=until)

    def _fetch_flow(self, tenant: str, refs: list[Ref], score: dict[Ref, float], around: int) -> Flow:

        plain: dict[Ref, SearchHit] = {}
        one = "SELECT key, seq, id, ts, role, data FROM sg_messages WHERE tenant = ? AND key = ? AND seq >= ? AND seq <= ?"
        rows = yield self.store._x(" UNION ALL ".join([one] * len(refs)),  # one round trip, each part a primary-key range
                                   tuple(v for key, seq in refs for v in (tenant, key, seq - around, seq + around)), "all")
        for key, s, id_, ts, role, data in rows:
            ref = (key, int(s))
            if ref in plain:
                continue  # the neighbourhoods of two hits overlap
            text = record_text({"message": stored_json(data, f"{self.store._where} session {key!r} message {s}")})
            plain[ref] = SearchHit(key, int(s), role, text, ts, id_, score.get(ref, 0.0))
        return _assemble(refs, plain, around)

    def fetch(self, tenant: str, refs: list[Ref], score: dict[Ref, float], around: int = 0) -> list[SearchHit]:
        """The hits for ``refs``, with up to ``around`` messages either side as ``neighbours``."""
        if self.store._empty or not refs:
            return []
        return self.store._run(self._fetch_flow(tenant, refs, score, around))

    def _documents_flow(self, tenant: str, keys: list[str] | None) -> Flow:
        if keys is not None and not keys:
            return []
        mark = self.store.dialect.mark
        where = f" AND key IN ({', '.join([mark] * len(keys))})" if keys else ""
        rows = yield self.store._x(f"SELECT key, seq, id, ts FROM sg_messages WHERE tenant = ?{where} ORDER BY key, seq",
                                   (tenant, *(keys or ())), "all")
        return [((k, int(s)), i, ts) for k, s, i, ts in rows]

    def documents(self, tenant: str, keys: list[str] | None = None) -> list[tuple[Ref, str | None, str]]:
        """``((key, seq), message id, ts)`` of every message of a tenant (for a dense index)."""
        return [] if self.store._empty else self.store._run(self._documents_flow(tenant, keys))

    def _since_flow(self, tenant: str, mark: dict[str, tuple[int, Any, Any]] | None) -> Flow:
        # each session's count and last message (a primary-key lookup each): O(sessions), not O(messages)
        rows = yield self.store._x(
            "SELECT s.key, s.message_count, m.id, m.ts FROM sg_sessions s LEFT JOIN sg_messages m ON m.tenant = s.tenant"
            " AND m.key = s.key AND m.seq = s.message_count - 1 WHERE s.tenant = ?", (tenant,), "all")
        now = {str(key): (int(count), id_, ts) for key, count, id_, ts in rows}
        if mark is None or any(key not in now or now[key][0] < mark[key][0] for key in mark):
            return now, None  # first look, or a session deleted or shortened: list the tenant once
        grown = [(key, mark.get(key, (0, None, None))) for key in sorted(now) if now[key] != mark.get(key)]
        if not grown:
            return now, []
        one = "SELECT key, seq, id, ts FROM sg_messages WHERE tenant = ? AND key = ? AND seq >= ?"
        found = []
        for start in range(0, len(grown), 200):  # each a primary-key range; SQLite takes 500 parts per compound SELECT
            part = grown[start : start + 200]
            found += (yield self.store._x(" UNION ALL ".join([one] * len(part)),
                                          tuple(v for key, (count, _, _) in part for v in (tenant, key, max(0, count - 1))), "all"))
        last = {key: old for key, old in grown}
        added = []
        for key, seq, id_, ts in found:
            count, old_id, old_ts = last[key]
            if int(seq) == count - 1:  # the message last seen there must still be there, else the session was reset
                if (id_, ts) != (old_id, old_ts):
                    return now, None
                continue
            added.append(((str(key), int(seq)), id_, ts))
        return now, sorted(added)

    def documents_since(self, tenant: str, mark: Any = None) -> tuple[Any, list[tuple[Ref, str | None, str]] | None]:
        """``(the mark now, ((key, seq), message id, ts) of the messages stored since mark)``, what a dense
        index kept up to date needs (``retrieval.dense``): one read of the tenant's sessions (each one's
        count and last message) and one of the new messages, never a listing of the tenant's messages;
        None for the messages when ``mark`` is None or a session was deleted, shortened or reset since
        (the caller lists the tenant once)."""
        if self.store._empty:
            return {}, None
        return self.store._run(self._since_flow(tenant, mark))

    def count(self, tenant: str) -> int:
        """How many messages of a tenant are indexed."""
        if self.store._empty:
            return 0
        return int(self.store._run(_one(self.store._x("SELECT count(*) FROM sg_search WHERE tenant = ?", (tenant,), "one")))[0])


def _one(step: Any) -> Flow:
    row = yield step
    return row


def _assemble(refs: list[Ref], plain: dict[Ref, SearchHit], around: int) -> list[SearchHit]:
    """The hits in the order of ``refs``, each with its neighbours from ``plain``."""
    hits = []
    for key, seq in refs:
        hit = plain.get((key, seq))
        if hit is None:
            continue
        if around:
            near = tuple(plain[(key, s)] for s in range(seq - around, seq + around + 1) if s != seq and (key, s) in plain)
            hit = SearchHit(hit.key, hit.seq, hit.role, hit.text, hit.ts, hit.message_id, hit.score, near)
        hits.append(hit)
    return hits
