"""Memory items: the value every item holds, and the pure edits the apply step makes.

An item's value::

    {"category", "owner", "owner_id": {"tenant", "id"}, "key", "uri", "abstract", "overview", "content",
     "status": "active" | "superseded", "version", "superseded_by", "supersedes",
     "sources": [{"session", "archive", "message_ids"}], "hash", "active_count",
     "last_used_at", "last_confirmed_at", "applied": [op refs, newest 32], "created_at", "updated_at",
     "terms": [retrieval terms the extraction model gave: other names, synonyms, translations]}

Every edit is a function of the old value that returns a new one and records the op's
reference in ``applied``; an edit whose reference is already there returns the value
unchanged, so replaying a journaled plan after a crash changes nothing twice.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime
import re
from typing import Any

from session_graph.memory.categories import CATEGORIES, content_hash, memory_uri
from session_graph.memory.owner_mark import MARK, owner_mark

__all__ = ["MAX_APPLIED", "MAX_TERMS", "add_sources", "applied", "clean_terms", "expired", "new_value", "record_op",
           "searchable_text", "terms_text"]

MAX_APPLIED = 32
INDEX_FIELDS = ["abstract", "content"]
MAX_TERMS = 16
"""The most retrieval terms kept with an item (the newest), and taken from one candidate."""
_TERM_CHARS = 60
_PIECE = re.compile(r"[^,;\n\uff0c\uff1b\u3001|]+")  # between separators (commas, semicolons, newlines, CJK commas, |)
_PIECE_CHARS = 4 * _TERM_CHARS  # of one piece, read before its spaces are collapsed
_MAX_PIECES = 1024


def clean_terms(raw: Any, limit: int = MAX_TERMS) -> list[str]:
    """Retrieval terms as a model (or a caller) gave them, made a short list of distinct strings:
    a list of strings as asked, or one comma/semicolon/newline separated string, numbers, nested
    lists, a mapping of lists (``{"synonyms": [...], "translations": [...]}``: its values); None,
    booleans and anything else count as nothing. Never raises: odd terms never fail a commit.
    Reads no further than it keeps: a huge reply costs what its first ``limit`` terms do."""
    out: dict[str, str] = {}
    seen = 0  # pieces looked at: a bound on junk (empty or repeated pieces) too

    def keep(piece: str) -> None:
        nonlocal seen
        seen += 1
        term = " ".join(piece[:_PIECE_CHARS].split()).strip("\"'`*-• ")[:_TERM_CHARS]
        if term and term.casefold() not in out:
            out[term.casefold()] = term

    def walk(value: Any, depth: int) -> None:
        if depth > 3 or len(out) >= limit or seen >= _MAX_PIECES:
            return
        if isinstance(value, str):
            for found in _PIECE.finditer(value):
                keep(found.group())
                if len(out) >= limit or seen >= _MAX_PIECES:
                    return
        elif isinstance(value, (int, float)) and not isinstance(value, bool):
            keep(str(value))
        elif isinstance(value, dict):
            for inner in value.values():
                walk(inner, depth + 1)
        elif isinstance(value, (list, tuple)):
            for inner in value:
                walk(inner, depth + 1)

    walk(raw, 0)
    return list(out.values())[:limit]


def terms_text(value: dict[str, Any]) -> str:
    """An item's (or a candidate's) retrieval terms as one text (empty when it has none)."""
    return " ".join(clean_terms(value.get("terms")))


def new_value(
    namespace: tuple[str, ...], key: str, category: str, abstract: str, overview: str, content: str,
    sources: list[dict[str, Any]], op_ref: str, now: str, terms: Any = None,
) -> dict[str, Any]:
    """The value of a new active item (``terms``: its retrieval terms, kept when there are any)."""
    value = {
        "category": category,
        "owner": f"{namespace[0]}/{namespace[1]}",
        MARK: owner_mark(namespace),  # whose it is (encoded parts): tells it from what an older version wrote at this label
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
    if kept := clean_terms(terms):
        value["terms"] = kept
    return value


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
