"""The prefilter: which stored memories a candidate is shown beside, without a model.

Per candidate, in its own owner and category: the item at its deterministic key, the items
with its content hash, then the most similar active items by BM25 (and, with an
``Embeddings``, by cosine similarity, fused by reciprocal rank), plus earlier candidates of
the same batch that share its key or content hash. Superseded items are never hits.

Indexes are kept per (store, namespace) in the process and refreshed by each item's
``updated_at``, so a commit at 10,000 stored memories re-indexes only what changed.
"""

from __future__ import annotations

import math
import threading
from typing import Any
import weakref

from langgraph.store.base import BaseStore

from session_graph.memory.bm25 import Bm25
from session_graph.memory.categories import content_hash, item_key
from session_graph.memory.items import searchable_text

__all__ = ["active_items", "hit_of", "key_catalogue", "prefilter"]

_LIMIT = 1_000_000
_lock = threading.Lock()
_indexes: weakref.WeakKeyDictionary[Any, dict[tuple[str, ...], _Index]] = weakref.WeakKeyDictionary()


class _Index:
    def __init__(self) -> None:
        self.bm25 = Bm25()
        self.seen: dict[str, str] = {}
        self.values: dict[str, dict[str, Any]] = {}
        self.vectors: dict[str, tuple[str, list[float]]] = {}


def active_items(store: BaseStore, namespace: tuple[str, ...]) -> dict[str, dict[str, Any]]:
    """The active items of a namespace, by key (indexed for BM25 as a side effect)."""
    return _index(store, namespace).values


def _index(store: BaseStore, namespace: tuple[str, ...]) -> _Index:
    items = store.search(namespace, filter={"status": "active"}, limit=_LIMIT)
    with _lock:
        per_store = _indexes.setdefault(store, {})
        index = per_store.setdefault(namespace, _Index())
        now = {}
        for item in items:
            if item.namespace != namespace:
                continue
            stamp = f"{item.updated_at.isoformat()}|{item.value.get('version')}|{item.value.get('hash')}"
            now[item.key] = item.value
            if index.seen.get(item.key) != stamp:
                index.bm25.add(item.key, searchable_text(item.value))
                index.seen[item.key] = stamp
        for gone in set(index.seen) - set(now):
            index.bm25.remove(gone)
            del index.seen[gone]
            index.vectors.pop(gone, None)
        index.values = now
        return index


def key_catalogue(store: BaseStore, namespaces: list[tuple[str, ...]], max_chars: int = 4000) -> list[str]:
    """``category/key: abstract`` of the active items of the mergeable namespaces, most recently
    updated first, within ``max_chars``: what the extraction prompt lists so the model reuses keys."""
    entries = []
    for namespace in namespaces:
        for key, value in active_items(store, namespace).items():
            entries.append((str(value.get("updated_at") or ""), f"{namespace[3]}/{key}: {value.get('abstract', '')}"[:200]))
    entries.sort(key=lambda entry: entry[0], reverse=True)
    out, used = [], 0
    for _, line in entries:
        if used + len(line) + 1 > max_chars:
            break
        out.append(line)
        used += len(line) + 1
    return out


def hit_of(key: str, value: dict[str, Any], kind: str, score: float | None = None) -> dict[str, Any]:
    """What the decide step is shown of a stored item."""
    return {"key": key, "kind": kind, "score": score, "abstract": value.get("abstract", ""),
            "content": value.get("content", ""), "version": value.get("version", 1), "hash": value.get("hash"),
            "applied": list(value.get("applied") or ())}


def _cosine(a: list[float], b: list[float]) -> float:
    dot = sum(x * y for x, y in zip(a, b, strict=False))
    norm = math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b))
    return dot / norm if norm else 0.0


def _similar(index: _Index, text: str, top_k: int, embeddings: Any) -> list[tuple[str, float]]:
    lexical = index.bm25.search(text, limit=max(top_k * 4, 20))
    if embeddings is None:
        return [(str(k), s) for k, s in lexical[:top_k]]
    stale = [k for k, v in index.values.items() if index.vectors.get(k, ("",))[0] != v.get("hash")]
    if stale:
        vectors = embeddings.embed_documents([searchable_text(index.values[k]) for k in stale])
        for key, vector in zip(stale, vectors, strict=True):
            index.vectors[key] = (index.values[key].get("hash"), list(vector))
    query = embeddings.embed_query(text)
    semantic = sorted(((k, _cosine(query, v[1])) for k, v in index.vectors.items() if k in index.values),
                      key=lambda pair: -pair[1])[: max(top_k * 4, 20)]
    fused: dict[str, float] = {}
    for ranking in (lexical, semantic):  # reciprocal-rank fusion
        for rank, (key, _) in enumerate(ranking):
            fused[str(key)] = fused.get(str(key), 0.0) + 1.0 / (60 + rank)
    return sorted(fused.items(), key=lambda pair: (-pair[1], pair[0]))[:top_k]


def prefilter(
    store: BaseStore, candidates: list[dict[str, Any]], namespaces: list[tuple[str, ...]], *, top_k: int = 5,
    embeddings: Any = None,
) -> list[dict[str, dict[str, Any]]]:
    """The hits of each candidate, by ref (``m1``, ``m2``... stored items; ``c0``... earlier candidates).

    Args:
        store: the memory store.
        candidates: dicts with ``category``, ``key``, ``abstract``, ``content``.
        namespaces: each candidate's namespace.
        top_k: similar items per candidate (besides exact key and hash matches).
        embeddings: a LangChain ``Embeddings`` to fuse with BM25, or None.
    """
    out: list[dict[str, dict[str, Any]]] = []
    for position, (candidate, namespace) in enumerate(zip(candidates, namespaces, strict=True)):
        index = _index(store, namespace)
        key = item_key(candidate["category"], candidate.get("key"), candidate["content"])
        digest = content_hash(candidate["content"])
        found: dict[str, dict[str, Any]] = {}
        if key in index.values:
            found[key] = hit_of(key, index.values[key], "key")
        for other, value in index.values.items():
            if value.get("hash") == digest and other not in found:
                found[other] = hit_of(other, value, "hash")
        text = f"{candidate.get('key') or ''} {candidate['abstract']} {candidate['content']}"
        for other, score in _similar(index, text, top_k, embeddings):
            if other not in found and len(found) < top_k + 2:
                found[other] = hit_of(other, index.values[other], "similar", round(score, 4))
        hits = {f"m{n + 1}": hit for n, hit in enumerate(found.values())}
        for earlier in range(position):
            before = candidates[earlier]
            if namespaces[earlier] != namespace:
                continue
            same_key = item_key(before["category"], before.get("key"), before["content"]) == key
            if same_key or content_hash(before["content"]) == digest:
                hits[f"c{earlier}"] = {"key": None, "kind": "batch", "score": None, "abstract": before["abstract"],
                                       "content": before["content"], "version": 0, "hash": content_hash(before["content"])}
        out.append(hits)
    return out
