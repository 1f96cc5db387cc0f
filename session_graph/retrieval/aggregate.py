"""Session-level aggregation: which sessions a ranked list of messages points to.

A session's score is its best message's score plus a decaying share of its next ones
(``best + 0.2 * second + 0.04 * third``): a session that answers with several messages
ranks above one with a single, equally strong, stray mention.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence

__all__ = ["rank_sessions"]


def rank_sessions(ranked: Sequence[tuple[tuple[Hashable, int], float]], limit: int = 5, *,
                  decay: float = 0.2, depth: int = 3) -> list[tuple[Hashable, float]]:
    """Sessions of ranked ``((key, seq), score)`` pairs, best first (at most ``limit``)."""
    per: dict[Hashable, list[float]] = {}
    for (key, _), score in ranked:
        per.setdefault(key, []).append(score)
    scored = []
    for key, scores in per.items():
        top = sorted(scores, reverse=True)[:depth]
        scored.append((key, sum(s * decay**i for i, s in enumerate(top))))
    scored.sort(key=lambda pair: -pair[1])
    return scored[:limit]
