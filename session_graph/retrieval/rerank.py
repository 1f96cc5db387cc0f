"""Optional reranking of the best candidates by a model the caller passes.

A reranker is either a callable ``(query, texts) -> scores`` or an object with
``predict(pairs)`` (a sentence-transformers ``CrossEncoder``). Nothing is downloaded here:
the caller brings the model. Scores of any scale work (only their order is used); a reply
of the wrong length or with a non-number is a ``ConfigurationError`` naming the reranker.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
import math
from typing import Any

from session_graph.errors import ConfigurationError

__all__ = ["Reranker", "rerank_scores"]

Reranker = Callable[[str, list[str]], Sequence[float]] | Any


def rerank_scores(reranker: Reranker, query: str, texts: list[str]) -> list[float]:
    """The reranker's score for each text (higher is better)."""
    if not texts:
        return []
    if hasattr(reranker, "predict"):
        raw = reranker.predict([(query, text) for text in texts])
    elif callable(reranker):
        raw = reranker(query, texts)
    else:
        raise ConfigurationError(f"reranker {reranker!r:.60} is neither a callable (query, texts) -> scores nor has predict(pairs).")
    try:
        scores = [float(s) for s in raw]
    except (TypeError, ValueError) as error:
        raise ConfigurationError(f"reranker {reranker!r:.60} returned something that is not a list of numbers: {error}") from None
    if len(scores) != len(texts) or any(math.isnan(s) for s in scores):
        raise ConfigurationError(
            f"reranker {reranker!r:.60} returned {len(scores)} scores for {len(texts)} texts (or a NaN); it must score each text once."
        )
    return scores
