"""The prefilter: which stored memories a candidate is shown beside, without a model.

Per candidate, in its own owner and category: the item at its deterministic key, the items
with its content hash, then the most similar active items by BM25 fused (reciprocal rank,
small ``k``) with the nearest by meaning: the store's own vector index when it has one, else
the config's ``Embeddings``, and with the retrieval terms the extraction model wrote (``terms``:
other names, synonyms, translations) on both sides: the candidate's text and terms against each
item's text and the terms kept with it (query and document expansion by the model's world
knowledge, one more lexical list; absent when neither side has terms); plus earlier candidates of the same batch that share its key or
content hash. Superseded items are never hits; each hit is shown as stored now.

Indexes are kept per (store, namespace) in the process and brought up to date through the
namespace's change feed (``changes.py``), so a commit at 10,000 stored memories reads and
re-indexes only what changed; candidates of a batch are matched by key and hash maps, in
linear time.
"""

from __future__ import annotations

from collections.abc import Iterator
import heapq
import threading
from typing import Any, Protocol, TypeGuard, runtime_checkable
import weakref

from langgraph.store.base import BaseStore

from session_graph.llm.quote import quote
from session_graph.memory.bm25 import Bm25, grams, terms
from session_graph.memory.categories import content_hash, item_key
from session_graph.memory.changes import changed_since_many
from session_graph.memory.items import clean_terms, expired, searchable_text, terms_text
from session_graph.retrieval.fusion import fuse_scores
from session_graph.retrieval.vectors import VectorIndex

__all__ = ["GRAMS_WEIGHT", "NamespaceIndex", "VectorIndexedStore", "active_items", "fuse", "hit_of", "indexed_by_meaning", "indexes",
           "key_catalogue", "nearest", "prefilter", "vector_tag"]

_LIMIT = 1_000_000
_lock = threading.Lock()
_indexes: weakref.WeakKeyDictionary[Any, dict[tuple[str, ...], NamespaceIndex]] = weakref.WeakKeyDictionary()


class NamespaceIndex:
    """One namespace's active items and their indexes (BM25 on words, on character grams and on
    merge keys; content hashes; the config's embeddings' vectors once used), kept by ``indexes``."""

    def __init__(self) -> None:
        self.bm25 = Bm25()
        self.grams = Bm25(analyzer=grams)  # character 4-grams: morphological variants the stemmer leaves apart
        self.keys = Bm25(analyzer=_key_terms)  # merge keys alone: a candidate's own key is evidence of its topic
        self.expanded: Bm25 | None = None  # text and retrieval terms (made when first needed: ``with_terms``)
        self.termed: set[str] = set()  # the items with terms (none: the expanded list is the word list, left out)
        self.values: dict[str, dict[str, Any]] = {}
        self.by_hash: dict[str, set[str]] = {}
        self.dense: VectorIndex | None = None  # the config's embeddings' vectors, by key (kept current by set)
        self.seq: int | None = None

    def set(self, key: str, value: dict[str, Any] | None) -> None:
        """Index an item's current value (None, or not active: drop it)."""
        old = self.values.pop(key, None)
        if old is not None:
            self.by_hash.get(str(old.get("hash")), set()).discard(key)
            self.bm25.remove(key)
            self.grams.remove(key)
            self.keys.remove(key)
            if self.expanded is not None:
                self.expanded.remove(key)
            self.termed.discard(key)
        if value is None or value.get("status") != "active":
            if self.dense is not None:
                self.dense.remove(key)
            return
        self.values[key] = value
        self.by_hash.setdefault(str(value.get("hash")), set()).add(key)
        text = searchable_text(value)
        self.bm25.add(key, text)
        self.grams.add(key, text)
        self.keys.add(key, key.replace("_", " "))
        extra = terms_text(value)
        if self.expanded is not None:
            self.expanded.add(key, f"{text} {extra}")
        if extra:
            self.termed.add(key)
        if self.dense is not None:
            self.dense.set(key, text, vector_tag(value))  # the same content and abstract: the vector stays

    def with_terms(self) -> Bm25:
        """The index of items' text and retrieval terms, made from the indexed values the first time
        (a store whose memories have no terms, probed without terms, never pays for it), then kept by ``set``."""
        expanded = self.expanded
        if expanded is None:
            with _lock:  # every refresh (``set``) holds it: none lands between the listing and the assignment
                if self.expanded is None:
                    built = Bm25()
                    for key, value in self.values.items():
                        built.add(key, f"{searchable_text(value)} {terms_text(value)}")
                    self.expanded = built
                expanded = self.expanded
        return expanded


def vector_tag(value: dict[str, Any]) -> tuple[Any, str]:
    """What an item's vector stands for: its content (by hash) and its abstract (an update may
    rewrite the abstract alone; both are in the embedded ``searchable_text``)."""
    return value.get("hash"), str(value.get("abstract", ""))


def _key_terms(text: str) -> list[str]:
    """A merge key's terms: its words and their character grams (``indent style`` meets ``indentation``)."""
    return [*terms(text), *grams(text)]


def active_items(store: BaseStore, namespace: tuple[str, ...]) -> dict[str, dict[str, Any]]:
    """The active items of a namespace, by key (indexed for BM25 as a side effect)."""
    return indexes(store, [namespace])[0].values


def indexes(store: BaseStore, namespaces: list[tuple[str, ...]]) -> list[NamespaceIndex]:
    """The namespaces' indexes, brought up to date through their change feeds, read in one
    ``batch`` (an owner's categories: one round trip, not one per category): nothing more when
    nothing changed, one read per changed key otherwise, a full listing only the first time (or
    after more changes than the feed keeps). Shared by the process's readers: read ``values``
    once per use (another thread may refresh an index meanwhile)."""
    with _lock:
        held = [_indexes.setdefault(store, {}).setdefault(namespace, NamespaceIndex()) for namespace in namespaces]
        feeds = changed_since_many(store, namespaces, [index.seq for index in held])
        for namespace, index, (seq, keys) in zip(namespaces, held, feeds, strict=True):
            _catch_up(store, namespace, index, keys)
            index.seq = seq
        return held


def _catch_up(store: BaseStore, namespace: tuple[str, ...], index: NamespaceIndex, keys: list[str] | None) -> None:
    if keys is None:
        fresh = NamespaceIndex()
        listed = [item for item in store.search(namespace, filter={"status": "active"}, limit=_LIMIT) if item.namespace == namespace]
        for item in sorted(listed, key=lambda item: str(item.value.get("updated_at") or "")):
            fresh.set(item.key, item.value)  # oldest first: ``values`` stays in the order of writes
        if index.dense is not None:  # vectors are by key and content hash: keep those still right
            for gone in index.dense.keys() - fresh.values.keys():
                index.dense.remove(gone)
            for key, value in fresh.values.items():
                index.dense.set(key, searchable_text(value), vector_tag(value))
        fresh.dense = index.dense
        index.__dict__.update(fresh.__dict__)
        return
    for key in keys:
        item = store.get(namespace, key)
        index.set(key, item.value if item is not None else None)


def key_catalogue(store: BaseStore, namespaces: list[tuple[str, ...]], max_chars: int = 4000) -> list[str]:
    """``"category/key": "abstract"`` (each a JSON string) of the active items of the mergeable namespaces, most recently
    written first, within ``max_chars``: what the extraction prompt lists so the model reuses keys.

    An index's ``values`` are kept in the order of writes (a write moves its key to the end; a
    full listing is sorted by ``updated_at``), so the newest are read from the end, namespaces
    merged by ``updated_at``: the cost is the catalogue's size, not the number stored."""

    def newest(namespace: tuple[str, ...], index: NamespaceIndex) -> Iterator[tuple[str, str]]:
        values = index.values
        for key in reversed(values):  # under the lock: no refresh meanwhile, so no copy of every key
            value = values[key]
            # quoted (stored text is data: a key or abstract cannot end its line), the abstract cut before quoting
            yield str(value.get("updated_at") or ""), f"{quote(f'{namespace[3]}/{key}')}: {quote(str(value.get('abstract', ''))[:160])}"

    out: list[str] = []
    used = 0
    held = indexes(store, namespaces)
    with _lock:
        merged = heapq.merge(*(newest(namespace, index) for namespace, index in zip(namespaces, held, strict=True)),
                             key=lambda entry: entry[0], reverse=True)
        for _, line in merged:
            if used + len(line) + 1 > max_chars:
                break
            out.append(line)
            used += len(line) + 1
    return out


def hit_of(key: str, value: dict[str, Any], kind: str, score: float | None = None) -> dict[str, Any]:
    """What the decide step is shown of a stored item."""
    return {"key": key, "kind": kind, "score": score, "abstract": value.get("abstract", ""),
            "content": value.get("content", ""), "version": value.get("version", 1), "hash": value.get("hash"),
            "applied": list(value.get("applied") or ()), "terms": clean_terms(value.get("terms"))}


def fuse(rankings: list[list[tuple[str, float]]], limit: int,
         weights: list[float] | None = None) -> list[tuple[str, float]]:
    """Fuse best-first rankings into the best ``limit``: retrieval's score fusion
    (``retrieval.fusion.fuse_scores``, the rule message search uses: each list rescaled by its
    best score, summed), with each list's first hit always kept, so a strong single-list hit
    (what only the embedding finds, or only BM25) survives the cut. ``weights``: each list's
    weight (default 1 each).
    """
    fused: list[tuple[str, float]] = sorted(((str(key), score) for key, score in fuse_scores(rankings, weights=weights)), key=lambda pair: (-pair[1], pair[0]))
    top = fused[:limit]
    chosen = {key for key, _ in top}
    heads = list(dict.fromkeys(str(ranking[0][0]) for ranking in rankings if ranking))
    missing = [key for key in heads if key not in chosen]
    if missing and limit > 0:
        score_of = dict(fused)
        keep = [pair for pair in top if pair[0] in heads]
        rest = [pair for pair in top if pair[0] not in heads]
        rest = rest[: max(0, limit - len(keep) - len(missing))]
        top = sorted([*keep, *rest, *((key, score_of[key]) for key in missing)], key=lambda pair: (-pair[1], pair[0]))[:limit]
    return top


@runtime_checkable
class VectorIndexedStore(Protocol):
    """A store with a vector index of its own: LangGraph's stores given ``index=`` keep its
    ``index_config`` (each put embedded), and their ``search(query=...)`` ranks by meaning."""

    index_config: Any


def indexed_by_meaning(store: Any) -> TypeGuard[VectorIndexedStore]:
    """Whether ``store`` has ``VectorIndexedStore``'s capability with an index configured (the
    attribute read directly: a runtime Protocol ``isinstance`` costs ~9 us, per category per recall)."""
    return bool(getattr(store, "index_config", None))


def nearest(index: NamespaceIndex, text: str, depth: int, embeddings: Any, store: BaseStore | None,
            namespace: tuple[str, ...] | None) -> list[tuple[str, float]] | None:
    """The nearest active items of ``index`` (``namespace``'s) by meaning: the store's own vector
    index when it is a ``VectorIndexedStore`` with an index configured (``store.search(query=...)``:
    nothing embedded twice), else ``embeddings`` (kept per index, current by the change feed);
    None: neither."""
    if store is not None and namespace is not None and indexed_by_meaning(store):
        found = store.search(namespace, query=text, filter={"status": "active"}, limit=depth)
        return [(item.key, float(item.score or 0.0)) for item in found if item.namespace == namespace and item.key in index.values]
    if embeddings is None:
        return None
    dense = index.dense
    if dense is None or dense.embeddings is not embeddings:
        with _lock:  # filled under the index lock: a refresh meanwhile would be overwritten by this fill's older values
            dense = index.dense
            if dense is None or dense.embeddings is not embeddings:
                dense = VectorIndex(embeddings)  # a new model: its vectors are embedded once, then kept current by set()
                for key, value in index.values.items():
                    dense.set(key, searchable_text(value), vector_tag(value))
                index.dense = dense
    return [(str(key), score) for key, score in dense.search(text, depth) if key in index.values]


BATCH_HITS = 3
"""The most earlier candidates of the same batch one candidate is shown (the newest with its key or text)."""
TERMS_WEIGHT = 1.0
"""The expanded (text + retrieval terms) list's weight in the fusion."""
GRAMS_WEIGHT = 0.5
"""The character-gram list's weight in the fusion (the word list's is 1): it finds variants the
stemmer misses, and is noisier than whole words."""


def _similar(index: NamespaceIndex, text: str, top_k: int, embeddings: Any, store: BaseStore | None = None,
             namespace: tuple[str, ...] | None = None, merge_key: str | None = None, terms: str = "") -> list[tuple[str, float]]:
    """The most similar active items: word BM25, character-gram BM25, the candidate's own merge
    key against stored keys (when it has one), text and retrieval terms against items' text and
    terms (when either side has terms) and the nearest by meaning, fused by score."""
    depth = max(top_k * 4, 20)
    rankings = [[(str(k), s) for k, s in index.bm25.search(text, limit=depth)],
                [(str(k), s) for k, s in index.grams.search(text, limit=depth)]]
    weights = [1.0, GRAMS_WEIGHT]
    if merge_key:
        rankings.append([(str(k), s) for k, s in index.keys.search(merge_key.replace("_", " "), limit=depth)])
        weights.append(1.0)
    if terms or index.termed:
        rankings.append([(str(k), s) for k, s in index.with_terms().search(f"{text} {terms}", limit=depth)])
        weights.append(TERMS_WEIGHT)
    semantic = nearest(index, text, depth, embeddings, store, namespace)
    if semantic is not None:
        rankings.append(semantic)
        weights.append(1.0)
    return fuse(rankings, top_k, weights=weights)


def prefilter(
    store: BaseStore, candidates: list[dict[str, Any]], namespaces: list[tuple[str, ...]], *, top_k: int = 5,
    embeddings: Any = None,
) -> list[dict[str, dict[str, Any]]]:
    """The hits of each candidate, by ref (``m1``, ``m2``... stored items; ``c0``... earlier candidates).

    Args:
        store: the memory store.
        candidates: dicts with ``category``, ``key``, ``abstract``, ``content`` (and optional ``terms``).
        namespaces: each candidate's namespace.
        top_k: similar items per candidate (besides exact key and hash matches).
        embeddings: a LangChain ``Embeddings`` to fuse with BM25, or None.
    """
    out: list[dict[str, dict[str, Any]]] = []
    batch: dict[tuple[tuple[str, ...], str], list[int]] = {}  # (namespace, key or hash) -> earlier candidates
    distinct = list(dict.fromkeys(namespaces))
    held = dict(zip(distinct, indexes(store, distinct), strict=True))  # one read of their feeds, not one per candidate
    for position, (candidate, namespace) in enumerate(zip(candidates, namespaces, strict=True)):
        index = held[namespace]
        key = item_key(candidate["category"], candidate.get("key"), candidate["content"])
        digest = content_hash(candidate["content"])
        # another thread may refresh the shared index meanwhile (a writer forgot an item): read each
        # value once, and an item gone since it was ranked is no hit
        values = index.values
        found: dict[str, dict[str, Any]] = {}
        if (value := values.get(key)) is not None:
            found[key] = value  # an expired event at its key still counts: the same event, restated
        for other in sorted(index.by_hash.get(digest, ())):
            if (value := values.get(other)) is not None:
                found.setdefault(other, value)
        kinds = {k: ("key" if k == key else "hash") for k in found}
        text = f"{candidate.get('key') or ''} {candidate['abstract']} {candidate['content']}"
        scores: dict[str, float] = {}
        for other, score in _similar(index, text, top_k, embeddings, store, namespace, candidate.get("key"),
                                     terms_text(candidate)):
            value = index.values.get(other)
            if other not in found and value is not None and len(found) < top_k + 2 and not expired(value):
                found[other], kinds[other], scores[other] = value, "similar", round(score, 4)
        hits = {}
        for n, (other, value) in enumerate(found.items()):
            item = store.get(namespace, other)  # what is stored now (the index may trail a foreign writer)
            if item is not None and item.value.get("status") == "active":
                value = item.value
            hits[f"m{n + 1}"] = hit_of(other, value, kinds[other], scores.get(other))
        # the newest few earlier candidates with its key or text (each of them was shown the ones before it):
        # bounded, so a reply of n candidates on one topic costs O(n), not O(n^2) hits and prompt lines
        same_key, same_text = batch.get((namespace, "k:" + key), []), batch.get((namespace, "h:" + digest), [])
        earlier = sorted({*same_key[-BATCH_HITS:], *same_text[-BATCH_HITS:]})[-BATCH_HITS:]
        for number in earlier:
            before = candidates[number]
            hits[f"c{number}"] = {"key": None, "kind": "batch", "score": None, "abstract": before["abstract"],
                                  "content": before["content"], "version": 0, "hash": content_hash(before["content"]),
                                  "terms": clean_terms(before.get("terms"))}
        batch.setdefault((namespace, "k:" + key), []).append(position)
        batch.setdefault((namespace, "h:" + digest), []).append(position)
        out.append(hits)
    return out
