"""Memory items: the value every item holds, and the pure edits the apply step makes.

An item's value::

    {"category", "owner", "key", "uri", "abstract", "overview", "content",
     "status": "active" | "superseded", "version", "superseded_by", "supersedes",
     "sources": [{"session", "archive", "message_ids"}], "hash", "active_count",
     "last_used_at", "last_confirmed_at", "applied": [op refs, newest 32], "created_at", "updated_at"}

Every edit is a function of the old value that returns a new one and records the op's
reference in ``applied``; an edit whose reference is already there returns the value
unchanged, so replaying a journaled plan after a crash changes nothing twice.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Any

from session_graph.memory.categories import CATEGORIES, content_hash, memory_uri

__all__ = ["MAX_APPLIED", "add_sources", "applied", "expired", "new_value", "record_op", "searchable_text"]

MAX_APPLIED = 32
INDEX_FIELDS = ["abstract", "content"]


def new_value(
    namespace: tuple[str, ...], key: str, category: str, abstract: str, overview: str, content: str,
    sources: list[dict[str, Any]], op_ref: str, now: str,
) -> dict[str, Any]:
    """The value of a new active item."""
    return {
        "category": category,
        "owner": f"{namespace[0]}/{namespace[1]}",
        "key": key,
        "uri": memory_uri(namespace, key),
        "abstract": abstract,
        "overview": overview,
        "content": content,
        "status": "active",
        "version": 1,
        "superseded_by": None,
        "supersedes": [],
        "sources": _union([], sources),
        "hash": content_hash(content),
        "active_count": 0,
        "last_used_at": None,
        "last_confirmed_at": now,
        "applied": [op_ref],
        "created_at": now,
        "updated_at": now,
    }


def applied(value: dict[str, Any] | None, op_ref: str) -> bool:
    """Whether an op was applied to this value already."""
    return value is not None and op_ref in (value.get("applied") or ())


def record_op(value: dict[str, Any], op_ref: str) -> dict[str, Any]:
    """``value`` with ``op_ref`` remembered (the newest ``MAX_APPLIED``)."""
    return {**value, "applied": [*(value.get("applied") or ())[-(MAX_APPLIED - 1) :], op_ref]}


def _union(old: Iterable[dict[str, Any]], new: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    out = [dict(s) for s in old]
    seen = {(s.get("session"), s.get("archive"), s.get("source")) for s in out}
    for source in new:
        mark = (source.get("session"), source.get("archive"), source.get("source"))
        if mark not in seen:
            out.append(dict(source))
            seen.add(mark)
    return out


def add_sources(value: dict[str, Any], sources: Iterable[dict[str, Any]]) -> dict[str, Any]:
    """``value`` with ``sources`` unioned in (by session and archive, or by source: ``remember``, ``tool``)."""
    return {**value, "sources": _union(value.get("sources") or (), sources)}


def searchable_text(value: dict[str, Any]) -> str:
    """What lexical search and the prefilter match: key, abstract and content."""
    return f"{str(value.get('key', '')).replace('_', ' ')} {value.get('abstract', '')} {value.get('content', '')}"


def is_mergeable(category: str) -> bool:
    """Whether items of ``category`` change after creation."""
    return CATEGORIES[category].mergeable


def expired(value: dict[str, Any], now: str | None = None) -> bool:
    """Whether an item's ``expires_at`` (ISO time) has passed (at ``now``, default: the clock)."""
    stamp = value.get("expires_at")
    if not stamp:
        return False
    try:
        when = datetime.fromisoformat(str(stamp).replace("Z", "+00:00"))
        at = datetime.fromisoformat(now.replace("Z", "+00:00")) if now else datetime.now(UTC)
    except ValueError:
        return False
    return (when if when.tzinfo else when.replace(tzinfo=UTC)) <= (at if at.tzinfo else at.replace(tzinfo=UTC))
