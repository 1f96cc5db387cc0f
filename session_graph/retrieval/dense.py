"""Optional dense retrieval through any LangChain ``Embeddings``.

``DenseIndex`` embeds each message once (keyed by its message id, so a reset or an edit that
gives new ids is embedded again) and ranks by cosine similarity. Each search first embeds the
messages of the source it has not seen (``Source.documents``), so the cost of embedding is
paid once per message; the per-query cost is one query embedding and one matrix product.
Keep one ``DenseIndex`` per store and embedding model (it holds the vectors in memory).
"""

from __future__ import annotations

from collections.abc import Hashable
import threading
from typing import Any

import numpy as np

from session_graph.errors import ConfigurationError

__all__ = ["DenseIndex"]

_MAX_CHARS = 2000


class DenseIndex:
    """Vectors of messages by message id, searched by cosine similarity.

    Args:
        embeddings: any ``langchain_core.embeddings.Embeddings`` (``embed_documents``,
            ``embed_query``).
        batch: how many texts one ``embed_documents`` call gets.
    """

    def __init__(self, embeddings: Any, *, batch: int = 64) -> None:
        if not (callable(getattr(embeddings, "embed_documents", None)) and callable(getattr(embeddings, "embed_query", None))):
            raise ConfigurationError(f"{embeddings!r:.60} is not a LangChain Embeddings (it needs embed_documents and embed_query).")
        self.embeddings, self.batch = embeddings, batch
        self._rows: dict[str, int] = {}
        self._matrix = np.zeros((0, 0), dtype=np.float32)
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._rows)

    def _add(self, pending: list[tuple[str, str]]) -> None:
        for start in range(0, len(pending), self.batch):
            chunk = pending[start : start + self.batch]
            vectors = self.embeddings.embed_documents([text[:_MAX_CHARS] or " " for _, text in chunk])
            block = _normalised(vectors, len(chunk), self.embeddings)
            if self._matrix.size == 0:
                self._matrix = block
            else:
                if block.shape[1] != self._matrix.shape[1]:
                    raise ConfigurationError(f"{self.embeddings!r:.60} returned vectors of another size ({block.shape[1]}, "
                                             f"before {self._matrix.shape[1]}); use one model per DenseIndex.")
                self._matrix = np.vstack([self._matrix, block])
            for message_id, _ in chunk:
                self._rows[message_id] = len(self._rows)

    def search(self, query: str, documents: list[tuple[Hashable, str | None, Any]], limit: int,
               text_of: Any) -> list[tuple[Hashable, float]]:
        """The best ``limit`` of ``documents`` (``(ref, message id, _)``) by cosine similarity to
        ``query``; ``text_of(refs)`` returns the texts of refs not embedded yet."""
        with self._lock:
            missing = [(ref, mid) for ref, mid, _ in documents if mid and mid not in self._rows]
            if missing:
                texts = text_of([ref for ref, _ in missing])
                self._add([(mid, texts.get(ref, "")) for ref, mid in missing])
            rows = [(ref, self._rows[mid]) for ref, mid, _ in documents if mid in self._rows]
            if not rows or self._matrix.size == 0:
                return []
            query_vector = _normalised([self.embeddings.embed_query(query)], 1, self.embeddings)[0]
            scores = self._matrix[[r for _, r in rows]] @ query_vector
        order = np.argsort(-scores, kind="stable")[:limit]
        return [(rows[i][0], float(scores[i])) for i in order if scores[i] > 0]


def _normalised(vectors: Any, count: int, model: Any) -> np.ndarray:
    try:
        block = np.asarray(vectors, dtype=np.float32)
    except (TypeError, ValueError) as error:
        raise ConfigurationError(f"{model!r:.60} returned something that is not a list of vectors: {error}") from None
    if block.ndim != 2 or block.shape[0] != count:
        raise ConfigurationError(f"{model!r:.60} returned {block.shape[0] if block.ndim else 0} vectors for {count} texts.")
    norms = np.linalg.norm(block, axis=1, keepdims=True)
    return block / np.where(norms == 0, 1.0, norms)
