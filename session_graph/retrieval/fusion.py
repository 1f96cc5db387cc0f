"""Fusing rankings: reciprocal rank with a small k, or normalised scores.

Reciprocal rank fusion (``sum 1 / (k + rank)``) with the usual k = 60 flattens the top of
each list, so a document that only one retriever finds, however confidently, sinks below
documents both find weakly. A small k (default 5) keeps the top of each list decisive: rank 1
of one list (1/6) beats rank 3 of both (2/8). ``fuse_scores`` instead rescales each list's
scores by its best score and adds them, which keeps how far ahead a strong hit is.
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
