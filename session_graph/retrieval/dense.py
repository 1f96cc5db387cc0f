"""Optional dense retrieval through any LangChain ``Embeddings``.

``DenseIndex`` keeps one ``VectorIndex`` (``retrieval.vectors``: vectors by key, updated in
place, exact while small, an inverted file beyond) per tenant and vector scope (a store's
whole tenant, or one session's messages searched in memory). Each message is embedded once,
keyed by its ``(key, seq)`` and tagged by its message id and arrival time, so a reset or a
rewrite that stores another message at a position is embedded again, and two tenants or two
sessions never share a vector. The per-query cost is one query embedding and the search.

How a source's vectors are kept up to date:

- a source that can say what it indexed since a mark (``documents_since``: the JSONL store's
  index, a session's own messages) is searched without listing its messages per query
  (``search_source``): only what is new is embedded; after a removal (a reset, a deleted
  session) the source says so and is listed once again, vectors whose message is unchanged
  kept, those of removed messages dropped;
- any other source, or a search limited to some sessions or a time range, hands ``search``
  the documents it ranks: those not held with the same tag are embedded, and the search reads
  only their rows (exact over that subset).

Keep one ``DenseIndex`` per store and embedding model (it holds the vectors in memory).
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
import threading
from typing import Any
import weakref

from session_graph.errors import ConfigurationError
from session_graph.retrieval.vectors import VectorIndex

__all__ = ["FETCH_CHUNK", "KEPT_PER_SESSION", "LIVE_EXACT_UP_TO", "DenseIndex", "fetch_texts"]
LIVE_EXACT_UP_TO = 20_000
"""Up to this many messages of a tenant are ranked exactly (one matrix-vector product); beyond,
through an inverted file (approximate; see ``retrieval.vectors``)."""


class DenseIndex:
    """Vectors of messages by tenant, scope and ``(key, seq)``, searched by cosine similarity.

    Args:
        embeddings: any ``langchain_core.embeddings.Embeddings`` (``embed_documents``,
            ``embed_query``).
        batch: how many texts one ``embed_documents`` call gets.
    """

    def __init__(self, embeddings: Any, *, batch: int = 64) -> None:
        if not (callable(getattr(embeddings, "embed_documents", None)) and callable(getattr(embeddings, "embed_query", None))):
            raise ConfigurationError(f"{embeddings!r:.60} is not a LangChain Embeddings (it needs embed_documents and embed_query).")
        self.embeddings, self.batch = embeddings, batch
        self._lock = threading.Lock()
        self._vectors: dict[tuple[str, Hashable], VectorIndex] = {}  # (tenant, scope) -> its vectors
        self._marks: dict[tuple[str, Hashable], tuple[Any, Any]] = {}  # (tenant, scope) -> (the source, weakly; its mark)

    def __len__(self) -> int:
        """How many vectors it holds (embedded or pending)."""
        return sum(len(vectors) for vectors in self._vectors.values())

    def _kept(self, tenant: str, scope: Hashable) -> VectorIndex:
        vectors = self._vectors.pop((tenant, scope), None)
        if vectors is None or vectors.embeddings is not self.embeddings:
            vectors = VectorIndex(self.embeddings, batch=self.batch, exact_up_to=LIVE_EXACT_UP_TO)
            self._marks.pop((tenant, scope), None)
            if isinstance(scope, tuple) and scope:  # (session id, its history): the least recently used past KEPT_PER_SESSION go
                same = [held for held in self._vectors if held[0] == tenant and isinstance(held[1], tuple) and held[1][:1] == scope[:1]]
                for held in same[: max(0, len(same) + 1 - KEPT_PER_SESSION)]:
                    del self._vectors[held]
                    self._marks.pop(held, None)
        self._vectors[(tenant, scope)] = vectors  # the most recently used last
        return vectors

    def search(self, query: str, documents: Sequence[tuple[Any, ...]], limit: int,
               text_of: Any, *, tenant: str = "", scope: Hashable = None) -> list[tuple[Hashable, float]]:
        """The best ``limit`` of ``documents`` (``(ref, message id, ts)``, ``ref`` being
        ``(key, seq)``; a source whose messages can change under their id adds a hash of the
        text: everything after the ref is the vector's tag) of ``tenant`` by cosine similarity
        to ``query``; ``text_of(refs)`` returns the texts of refs not embedded with this tag."""
        with self._lock:
            vectors = self._kept(tenant, scope)
            changed = [(ref, tuple(tag)) for ref, *tag in documents if not vectors.holds(ref, tuple(tag))]
            if changed:
                texts = text_of([ref for ref, _ in changed])
                for ref, tag in changed:
                    vectors.set(ref, texts.get(ref, ""), tag)
            return vectors.search(query, limit, among=[document[0] for document in documents])

    def search_source(self, query: str, source: Any, tenant: str, limit: int) -> list[tuple[Hashable, float]] | None:
        """The best ``limit`` messages of ``tenant`` in ``source`` by cosine similarity, read from the
        vectors kept up to date by ``source.documents_since`` (only what is new is listed and
        embedded); None when the source cannot say what is new (use ``search``)."""
        since = getattr(source, "documents_since", None)
        if since is None:
            return None
        scope = getattr(source, "vector_scope", None)
        with self._lock:
            vectors = self._kept(tenant, scope)
            # a mark is the source's own (another store's, of another shape, would be misread): another source lists once
            held, mark = self._marks.get((tenant, scope), (None, None))
            mark, added = since(tenant, mark if held is not None and held() is source else None)
            if added is None:  # first use, another index generation, or messages removed: list them once
                added = source.documents(tenant)
                present = {document[0] for document in added}
                for gone in vectors.keys() - present:
                    vectors.remove(gone)
            changed = [(ref, tuple(tag)) for ref, *tag in added if not vectors.holds(ref, tuple(tag))]
            if changed:
                texts = fetch_texts(source, tenant, [ref for ref, _ in changed])
                for ref, tag in changed:
                    vectors.set(ref, texts.get(ref, ""), tag)
            found = vectors.search(query, limit)
            self._marks[(tenant, scope)] = (weakref.ref(source), mark)  # only once all went well: a failure lists again next time
            return found


KEPT_PER_SESSION = 64
"""Histories kept per session id (``MessageSource.vector_scope``: many tenants' ``"main"``, or one
session cleared and refilled), the least recently searched dropped beyond."""


FETCH_CHUNK = 200
"""Refs per ``fetch`` when texts are read for embedding (a SQL store reads each fetch in one
statement: SQLite allows at most 500 parts in a compound SELECT)."""


def fetch_texts(source: Any, tenant: str, refs: list[Any]) -> dict[Any, str]:
    """The texts of ``refs`` in ``source``, by ref, fetched ``FETCH_CHUNK`` at a time."""
    texts: dict[Any, str] = {}
    for start in range(0, len(refs), FETCH_CHUNK):
        texts.update({(h.key, h.seq): h.text for h in source.fetch(tenant, refs[start : start + FETCH_CHUNK], {})})
    return texts
