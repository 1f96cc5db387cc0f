"""Optional dense retrieval through any LangChain ``Embeddings``.

``DenseIndex`` embeds each message once (keyed by its tenant, session key, sequence number,
message id and arrival time, so two tenants or sessions that happen to reuse a message id never
share a vector, and a reset or a rewrite that stores the message again is embedded again) and ranks by cosine similarity. Each search first embeds the
messages of the source it has not seen (``Source.documents``), so the cost of embedding is
paid once per message; the per-query cost is one query embedding and one matrix product.
Keep one ``DenseIndex`` per store and embedding model (it holds the vectors in memory).
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
import threading
from typing import TYPE_CHECKING, Any

from session_graph.errors import ConfigurationError

if TYPE_CHECKING:  # numpy is imported where an index first uses it: `import session_graph` stays light
    import numpy as np

__all__ = ["DenseIndex"]

_MAX_CHARS = 2000


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

    def __len__(self) -> int:
        return len(self._rows)

    def _add(self, pending: list[tuple[tuple[str, Hashable, str | None, Any], str]]) -> None:
        """Embed ``pending`` (``(cache key, text)``) in batches; the blocks are joined once (one
        copy of the matrix per call, not one per batch)."""
        import numpy as np  # loaded on first use, not by `import session_graph`
        blocks: list[np.ndarray] = [self._matrix] if self._matrix.size else []
        width = self._matrix.shape[1] if self._matrix.size else None
        for start in range(0, len(pending), self.batch):
            chunk = pending[start : start + self.batch]
            vectors = self.embeddings.embed_documents([text[:_MAX_CHARS] or " " for _, text in chunk])
            block = _normalised(vectors, len(chunk), self.embeddings)
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
            query_vector = _normalised([self.embeddings.embed_query(query)], 1, self.embeddings)[0]
            scores = self._matrix[[r for _, r in rows]] @ query_vector
        order = np.argsort(-scores, kind="stable")[:limit]
        return [(rows[i][0], float(scores[i])) for i in order if scores[i] > 0]


def _normalised(vectors: Any, count: int, model: Any) -> np.ndarray:
    import numpy as np  # loaded on first use, not by `import session_graph`
    try:
        block = np.asarray(vectors, dtype=np.float32)
    except (TypeError, ValueError) as error:
        raise ConfigurationError(f"{model!r:.60} returned something that is not a list of vectors: {error}") from None
    if block.ndim != 2 or block.shape[0] != count:
        raise ConfigurationError(f"{model!r:.60} returned {block.shape[0] if block.ndim else 0} vectors for {count} texts.")
    norms = np.linalg.norm(block, axis=1, keepdims=True)
    return block / np.where(norms == 0, 1.0, norms)
