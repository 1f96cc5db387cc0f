"""Optional dense retrieval through any LangChain ``Embeddings``.

``DenseIndex`` embeds each message once (keyed by its tenant, session key, sequence number,
message id and arrival time, so two tenants or sessions that happen to reuse a message id never
share a vector, and a reset or a rewrite that stores the message again is embedded again) and ranks by cosine similarity. Each search first embeds the
messages of the source it has not seen (``Source.documents``), so the cost of embedding is
paid once per message; the per-query cost is one query embedding and one matrix product.
Keep one ``DenseIndex`` per store and embedding model (it holds the vectors in memory).

A source that can say what it indexed since a mark (``documents_since``: the JSONL store's
index) is searched without listing the tenant's messages per query (``search_source``): the
tenant's vectors live in a ``VectorIndex`` (``retrieval.vectors``) brought up to date with what is new
(embedded once), and a query reads the index, not every message id (exact up to
``LIVE_EXACT_UP_TO`` vectors, an inverted file beyond). After a reset (messages removed) the
source says so and the tenant is listed once again; vectors whose message is unchanged stay.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
import threading
from typing import TYPE_CHECKING, Any

from session_graph.errors import ConfigurationError
from session_graph.retrieval.vectors import MAX_CHARS as _MAX_CHARS
from session_graph.retrieval.vectors import VectorIndex, normalised, row_scores

if TYPE_CHECKING:  # numpy is imported where an index first uses it: `import session_graph` stays light
    import numpy as np

__all__ = ["LIVE_EXACT_UP_TO", "DenseIndex"]
LIVE_EXACT_UP_TO = 20_000
"""Up to this many messages of a tenant, ``search_source`` ranks them all (one matrix-vector
product); beyond, through an inverted file (approximate; see ``retrieval.vectors``)."""


class DenseIndex:
    """Vectors of messages by (tenant, key, seq, message id, ts), searched by cosine similarity.

    Args:
        embeddings: any ``langchain_core.embeddings.Embeddings`` (``embed_documents``,
            ``embed_query``).
        batch: how many texts one ``embed_documents`` call gets.
    """

    def __init__(self, embeddings: Any, *, batch: int = 64) -> None:
        import numpy as np  # loaded on first use, not by `import session_graph`
        if not (callable(getattr(embeddings, "embed_documents", None)) and callable(getattr(embeddings, "embed_query", None))):
            raise ConfigurationError(f"{embeddings!r:.60} is not a LangChain Embeddings (it needs embed_documents and embed_query).")
        self.embeddings, self.batch = embeddings, batch
        self._rows: dict[tuple[str, Hashable, str | None, Any], int] = {}
        self._matrix = np.zeros((0, 0), dtype=np.float32)
        self._lock = threading.Lock()
        self._live: dict[str, tuple[Any, Any]] = {}  # tenant -> (the source's mark, its VectorIndex)

    def __len__(self) -> int:
        """How many vectors it holds (those ``search`` was handed and the tenants' kept by ``search_source``)."""
        return len(self._rows) + sum(len(vectors) for _, vectors in self._live.values())

    def _add(self, pending: list[tuple[tuple[str, Hashable, str | None, Any], str]]) -> None:
        """Embed ``pending`` (``(cache key, text)``) in batches; the blocks are joined once (one
        copy of the matrix per call, not one per batch)."""
        import numpy as np  # loaded on first use, not by `import session_graph`
        blocks: list[np.ndarray] = [self._matrix] if self._matrix.size else []
        width = self._matrix.shape[1] if self._matrix.size else None
        for start in range(0, len(pending), self.batch):
            chunk = pending[start : start + self.batch]
            vectors = self.embeddings.embed_documents([text[:_MAX_CHARS] or " " for _, text in chunk])
            block = normalised(vectors, len(chunk), self.embeddings)
            if width is not None and block.shape[1] != width:
                raise ConfigurationError(f"{self.embeddings!r:.60} returned vectors of another size ({block.shape[1]}, "
                                         f"before {width}); use one model per DenseIndex.")
            width = block.shape[1]
            blocks.append(block)
        if not blocks:
            return
        self._matrix = blocks[0] if len(blocks) == 1 else np.concatenate(blocks)
        for cache_key, _ in pending:  # only once every batch embedded: a failure leaves the index as it was
            self._rows[cache_key] = len(self._rows)

    def search(self, query: str, documents: Sequence[tuple[Hashable, str | None, Any]], limit: int,
               text_of: Any, *, tenant: str = "") -> list[tuple[Hashable, float]]:
        """The best ``limit`` of ``documents`` (``(ref, message id, ts)``, ``ref`` being
        ``(key, seq)``) of ``tenant`` by cosine similarity to ``query``; ``text_of(refs)``
        returns the texts of refs not embedded yet."""
        import numpy as np  # loaded on first use, not by `import session_graph`
        with self._lock:
            keyed = [(ref, (tenant, ref, mid, ts)) for ref, mid, ts in documents]
            missing = [(ref, ck) for ref, ck in keyed if ck not in self._rows]
            if missing:
                texts = text_of([ref for ref, _ in missing])
                self._add([(ck, texts.get(ref, "")) for ref, ck in missing])
            rows = [(ref, self._rows[ck]) for ref, ck in keyed if ck in self._rows]
            if not rows or self._matrix.size == 0:
                return []
            query_vector = normalised([self.embeddings.embed_query(query)], 1, self.embeddings)[0]
            scores = row_scores(self._matrix[[r for _, r in rows]], query_vector)
        order = np.argsort(-scores, kind="stable")[:limit]
        return [(rows[i][0], float(scores[i])) for i in order if scores[i] > 0]


    def search_source(self, query: str, source: Any, tenant: str, limit: int) -> list[tuple[Hashable, float]] | None:
        """The best ``limit`` messages of ``tenant`` in ``source`` by cosine similarity, read from the
        tenant's vectors kept up to date by ``source.documents_since`` (only what is new is listed and
        embedded); None when the source cannot say what is new (use ``search``)."""
        since = getattr(source, "documents_since", None)
        if since is None:
            return None
        with self._lock:
            mark, vectors = self._live.get(tenant, (None, None))
            mark, added = since(tenant, mark)
            if vectors is None or vectors.embeddings is not self.embeddings:
                vectors = VectorIndex(self.embeddings, batch=self.batch, exact_up_to=LIVE_EXACT_UP_TO)
            if added is None:  # first use, another index generation, or messages removed: list them once
                added = source.documents(tenant)
                present = {ref for ref, _, _ in added}
                for gone in vectors.keys() - present:
                    vectors.remove(gone)
            changed = [(ref, (mid, ts)) for ref, mid, ts in added if not vectors.holds(ref, (mid, ts))]
            if changed:
                texts = {(h.key, h.seq): h.text for h in source.fetch(tenant, [ref for ref, _ in changed], {})}
                for ref, tag in changed:
                    vectors.set(ref, texts.get(ref, ""), tag)
            found = vectors.search(query, limit)
            self._live[tenant] = (mark, vectors)  # only once all went well: a failure lists again next time
            return found
