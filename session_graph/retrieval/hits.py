"""The hit type every search returns (sessions, stores, the agent tool)."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["SearchHit"]


@dataclass(frozen=True, slots=True)
class SearchHit:
    """A message a search found: where it is (``key``, ``seq``, ``message_id``), what it says,
    when it arrived, how well it matched (``score``: higher is better; 0 for a substring match)
    and, when asked for, the messages around it (``neighbours``, oldest first, without the hit)."""

    key: str
    seq: int
    role: str
    text: str
    ts: str
    message_id: str | None = None
    score: float = 0.0
    neighbours: tuple[SearchHit, ...] = ()
