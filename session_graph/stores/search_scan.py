"""Ranked search for a store without its own index (a user's ``SessionStore``).

Builds one in-memory BM25 index per tenant from the store's ``list`` and ``read``, and on
each search re-reads only the sessions whose ``version`` changed since (and forgets deleted
ones). The built-in stores keep real indexes (``stores.search_index``, ``stores.search_sql``);
this keeps ``SessionManager.search`` working, correctly if not as fast, on any store.
"""

from __future__ import annotations

import threading
from typing import Any

from session_graph.retrieval.bm25 import Bm25Index
from session_graph.retrieval.hits import SearchHit
from session_graph.retrieval.tokenize import terms
from session_graph.stores.search_index import record_text

__all__ = ["ScanSource"]

Ref = tuple[str, int]


class ScanSource:
    """A ``retrieval.search.Source`` over any ``SessionStore`` (see the module docstring)."""

    def __init__(self, store: Any) -> None:
        self.store = store
        self._tenants: dict[str, tuple[Bm25Index, dict[str, int], dict[Ref, dict[str, Any]]]] = {}
        self._lock = threading.Lock()

    def _sync(self, tenant: str) -> tuple[Bm25Index, dict[str, int], dict[Ref, dict[str, Any]]]:
        index, versions, records = self._tenants.setdefault(tenant, (Bm25Index(), {}, {}))
        infos = {info.key for info in self.store.list(tenant)}
        for key in [k for k in versions if k not in infos]:
            index.remove_owner(key)
            versions.pop(key)
        for key in infos:
            version = self.store.version(tenant, key)
            if version == versions.get(key):
                continue
            snapshot = self.store.read(tenant, key)
            index.remove_owner(key)
            for ref in [r for r in records if r[0] == key]:
                del records[ref]
            for record in snapshot.records if snapshot is not None else ():
                ref = (key, int(record.get("seq", 0)))
                records[ref] = record
                index.add(ref, terms(record_text(record)), owner=key)
            versions[key] = version
        return index, versions, records

    def rank(self, tenant: str, words: list[str], limit: int, *, keys: list[str] | None = None,
             since: str | None = None, until: str | None = None) -> list[tuple[Ref, float]]:
        with self._lock:
            index, _, records = self._sync(tenant)
            allow = None
            if since is not None or until is not None:
                stamps = [str(records.get(index.key_of(d), {}).get("ts", "")) for d in range(index.ids)]  # type: ignore[call-overload]
                allow = index.mask((since is None or t >= since) and (until is None or t < until) for t in stamps)
            return index.search(words, limit, owners=keys, allow=allow)  # type: ignore[return-value]

    def fetch(self, tenant: str, refs: list[Ref], score: dict[Ref, float], around: int = 0) -> list[SearchHit]:
        with self._lock:
            _, _, records = self._tenants.get(tenant) or self._sync(tenant)

            def hit(ref: Ref, value: float = 0.0) -> SearchHit | None:
                record = records.get(ref)
                if record is None:
                    return None
                return SearchHit(ref[0], ref[1], str(record.get("role", "")), record_text(record), str(record.get("ts", "")),
                                 record.get("id"), value)

            hits = []
            for ref in refs:
                found = hit(ref, score.get(ref, 0.0))
                if found is None:
                    continue
                if around:
                    near = tuple(h for s in range(ref[1] - around, ref[1] + around + 1)
                                 if s != ref[1] and (h := hit((ref[0], s))) is not None)
                    found = SearchHit(found.key, found.seq, found.role, found.text, found.ts, found.message_id, found.score, near)
                hits.append(found)
            return hits

    def documents(self, tenant: str, keys: list[str] | None = None) -> list[tuple[Ref, str | None, str]]:
        with self._lock:
            _, _, records = self._sync(tenant)
            return [(ref, r.get("id"), str(r.get("ts", ""))) for ref, r in records.items() if keys is None or ref[0] in keys]
