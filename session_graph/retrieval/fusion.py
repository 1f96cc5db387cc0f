"""Fusing rankings: normalised scores (the default), or reciprocal rank.

Reciprocal rank fusion (``sum 1 / (k + rank)``) rewards agreement: a document two retrievers
both rank 2nd beats one that a single retriever ranks 1st by far, whatever k (1/(k+1) <
2/(k+2)); with the usual k = 60 the top of each list is flattened further. ``fuse_scores``
rescales each list by its best score and adds them, so a strong single-list hit (an exact
name the embedding misses, a paraphrase BM25 misses) keeps its place at the top; it is what
the search pipeline uses. ``fuse_ranks`` with a small k (default 5) is there for rankings
whose scores are not comparable (a reranker's order).
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence

__all__ = ["fuse_ranks", "fuse_scores"]

Ranking = Sequence[tuple[Hashable, float]]


def fuse_ranks(rankings: Sequence[Ranking], *, k: int = 5, weights: Sequence[float] | None = None) -> list[tuple[Hashable, float]]:
    """Reciprocal rank fusion of ranked (id, score) lists, best first."""
    if k < 0:
        raise ValueError(f"k must be >= 0, got {k!r}.")
    weights = weights or [1.0] * len(rankings)
    fused: dict[Hashable, float] = {}
    for ranking, weight in zip(rankings, weights, strict=True):
        for rank, (item, _) in enumerate(ranking, start=1):
            fused[item] = fused.get(item, 0.0) + weight / (k + rank)
    return sorted(fused.items(), key=lambda pair: -pair[1])


def fuse_scores(rankings: Sequence[Ranking], *, weights: Sequence[float] | None = None) -> list[tuple[Hashable, float]]:
    """Each list's scores divided by its best (so each list's top is 1), summed, best first."""
    weights = weights or [1.0] * len(rankings)
    fused: dict[Hashable, float] = {}
    for ranking, weight in zip(rankings, weights, strict=True):
        best = max((score for _, score in ranking), default=0.0)
        if best <= 0:
            continue
        for item, score in ranking:
            fused[item] = fused.get(item, 0.0) + weight * max(score, 0.0) / best
    return sorted(fused.items(), key=lambda pair: -pair[1])
