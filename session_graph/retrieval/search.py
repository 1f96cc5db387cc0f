"""The search pipeline: query terms -> lexical ranking (the source's index) -> optional dense
ranking, fused -> optional reranking -> hits with their neighbours.

A ``Source`` is whatever holds the index: a store's ``search_index`` (JSONL terms files,
SQLite FTS5, Postgres) or ``retrieval.messages.MessageSource`` over a session's messages.
The pipeline never lists messages itself; with no dense index and no reranker it costs one
``rank`` and one ``fetch``.
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass
from datetime import UTC, date, datetime
import re
from typing import Any, Protocol

from session_graph.errors import ConfigurationError
from session_graph.retrieval.aggregate import rank_sessions
from session_graph.retrieval.dense import DenseIndex, fetch_texts
from session_graph.retrieval.fusion import fuse_scores
from session_graph.retrieval.hits import SearchHit
from session_graph.retrieval.rerank import Reranker, rerank_scores
from session_graph.retrieval.tokenize import query_terms, terms

__all__ = ["SearchOptions", "Source", "bridge_terms", "make_options", "search", "search_sessions", "time_bound"]

Ref = tuple[str, int]


class Source(Protocol):
    """An index of messages: ranks them for terms, and reads hits back."""

    def rank(self, tenant: str, words: list[str], limit: int, *, keys: list[str] | None = None,
             since: str | None = None, until: str | None = None) -> list[tuple[Ref, float]]: ...

    def fetch(self, tenant: str, refs: list[Ref], score: dict[Ref, float], around: int = 0) -> list[SearchHit]: ...

    def documents(self, tenant: str, keys: list[str] | None = None) -> list[tuple[Ref, str | None, str]]: ...


@dataclass(frozen=True, slots=True)
class SearchOptions:
    """How a ranked search runs (one object instead of the same keywords in every caller).

    Attributes:
        around: bring up to this many messages either side of each hit (``neighbours``).
        since, until: only messages that arrived in ``since <= ts < until`` (ISO strings with
            any offset, dates or datetimes; naive ones are UTC).
        dense: a ``DenseIndex`` (any LangChain ``Embeddings``) fused with the lexical ranking.
        reranker: reorders the best ``candidates`` (see ``retrieval.rerank``).
        candidates: how many lexical (and dense) candidates fusion and reranking see.
        bridge: the weight of a second lexical pass for the names in the best hit (multi-hop
            questions; ``bridge_terms``), fused by score; 0 turns it off (one index query).
        dense_weight: the dense list's weight in score fusion (``retrieval.fusion.fuse_scores``:
            each list scaled by its best score, so a strong single-list hit survives).
    """

    around: int = 0
    since: str | date | datetime | None = None
    until: str | date | datetime | None = None
    dense: DenseIndex | None = None
    reranker: Reranker | None = None
    candidates: int = 50
    dense_weight: float = 1.0
    bridge: float = 0.5

    def __post_init__(self) -> None:
        if isinstance(self.around, bool) or not isinstance(self.around, int) or not 0 <= self.around <= 20:
            raise ConfigurationError(f"around must be a whole number from 0 to 20, got {self.around!r}.")
        if isinstance(self.candidates, bool) or not isinstance(self.candidates, int) or self.candidates < 1:
            raise ConfigurationError(f"candidates must be a whole number >= 1, got {self.candidates!r}.")
        if self.dense is not None and not isinstance(self.dense, DenseIndex):
            raise ConfigurationError(f"dense must be a retrieval DenseIndex (wrap your Embeddings: DenseIndex(embeddings)), got {self.dense!r:.60}.")


def make_options(options: SearchOptions | None, settings: dict[str, Any]) -> SearchOptions:
    """``options``, or a ``SearchOptions`` of keyword ``settings`` (not both)."""
    if options is not None and not isinstance(options, SearchOptions):
        raise ConfigurationError(f"options must be a SearchOptions, got {type(options).__name__}.")
    if options is not None and settings:
        raise ConfigurationError(f"give either options or keyword settings ({', '.join(settings)}), not both.")
    if options is not None:
        return options
    unknown = sorted(set(settings) - set(SearchOptions.__dataclass_fields__))
    if unknown:
        raise ConfigurationError(f"unknown search setting(s) {', '.join(unknown)}; known: {', '.join(SearchOptions.__dataclass_fields__)}.")
    return SearchOptions(**settings)


def time_bound(value: str | date | datetime | None, name: str) -> str | None:
    """A time bound as the stores write ``ts`` (ISO 8601 UTC with microseconds and ``Z``), or None.

    Accepts a datetime (naive: UTC), a date (its midnight UTC) or an ISO string with any offset,
    with or without fractional seconds (``2024-03-15``, ``2024-03-15T10:00+02:00``), so the
    stores can compare it as text with what they wrote.
    """
    if value is None:
        return None
    if isinstance(value, str):
        try:
            parsed = datetime.fromisoformat(value.strip().replace("z", "Z").replace("Z", "+00:00"))
        except ValueError:
            raise ConfigurationError(f"{name} {value!r} is not an ISO date or time (like 2024-03-15, "
                                     f"2024-03-15T10:00:00Z or 2024-03-15T12:00:00+02:00).") from None
        value = parsed
    if isinstance(value, datetime):
        value = value if value.tzinfo else value.replace(tzinfo=UTC)
        return value.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    if isinstance(value, date):
        return f"{value.isoformat()}T00:00:00.000000Z"
    raise ConfigurationError(f"{name} must be an ISO string, a date or a datetime, got {type(value).__name__}.")


def _check(query: Any, k: Any) -> None:
    if not isinstance(query, str) or not query.strip():
        raise ValueError(f"search needs a non-empty query string, got {query!r:.60}.")
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise ConfigurationError(f"k must be a whole number >= 1, got {k!r}.")


def _ranked(source: Source, tenant: str, query: str, k: int, keys: list[str] | None, options: SearchOptions) -> list[tuple[Ref, float]]:
    since, until = time_bound(options.since, "since"), time_bound(options.until, "until")
    words = query_terms(query)
    pool = max(k, options.candidates) if (options.dense is not None or options.reranker is not None) else k
    lexical = source.rank(tenant, words, pool, keys=keys, since=since, until=until) if words else []
    if options.bridge and lexical:
        lexical = _bridged(source, tenant, words, lexical, pool, keys, since, until, options.bridge)
    ranked: list[tuple[Hashable, float]] = list(lexical)
    if options.dense is not None:
        # the whole tenant: its vectors kept up to date by what the source indexed since (no listing per query)
        dense = options.dense.search_source(query, source, tenant, pool) if keys is None and since is None and until is None else None
        if dense is None:  # some sessions or a time range, or a source that cannot say what is new
            documents = [d for d in source.documents(tenant, keys)
                         if (since is None or d[2] >= since) and (until is None or d[2] < until)]

            def text_of(refs: list[Ref]) -> dict[Ref, str]:
                return fetch_texts(source, tenant, refs)

            dense = options.dense.search(query, documents, pool, text_of, tenant=tenant, scope=getattr(source, "vector_scope", None))
        ranked = fuse_scores([lexical, dense], weights=[1.0, options.dense_weight]) if lexical else dense
    if options.reranker is not None and ranked:
        head = [ref for ref, _ in ranked[:pool]]
        texts = {(h.key, h.seq): h.text for h in source.fetch(tenant, head, {})}  # type: ignore[arg-type]
        head = [ref for ref in head if ref in texts]
        scores = rerank_scores(options.reranker, query, [texts[ref] for ref in head])
        ranked = sorted(zip(head, scores, strict=True), key=lambda pair: -pair[1])
    return ranked  # type: ignore[return-value]


_NAME = re.compile(r"(?<![.!?:]\s)(?<!^)\b([A-Z][\w'-]*[a-z][\w'-]*|[A-Z]{2,}\w*)")


def bridge_terms(text: str, words: list[str]) -> list[str]:
    """Terms of the names and titles in ``text`` (capitalised words not opening a sentence) that
    ``words`` does not have: what links a hit to the evidence a multi-hop question also needs."""
    found: list[str] = []
    for line in text.splitlines():
        for match in _NAME.finditer(line.strip()):
            found.extend(t for t in terms(match.group(1)) if t not in words and t not in found)
    return found[:6]


def _bridged(source: Source, tenant: str, words: list[str], lexical: list[tuple[Ref, float]], pool: int,
             keys: list[str] | None, since: str | None, until: str | None, weight: float) -> list[tuple[Ref, float]]:
    """One hop of pseudo-relevance feedback: the names in the best hit, searched on their own,
    fused (``weight``) with the first ranking, so a question whose answer is two facts apart
    ("the city where I finished the book Priya recommended") finds the second one too."""
    top = source.fetch(tenant, [lexical[0][0]], {})
    extra = bridge_terms(top[0].text, words) if top else []
    if not extra:
        return lexical
    second = source.rank(tenant, extra + words, pool, keys=keys, since=since, until=until)
    best = lexical[0][1]
    fused = fuse_scores([lexical, second], weights=[1.0, weight])
    return [(ref, score * best) for ref, score in fused]  # type: ignore[misc]


def search(source: Source, tenant: str, query: str, k: int = 10, *, keys: list[str] | None = None,
           options: SearchOptions | None = None) -> list[SearchHit]:
    """The ``k`` messages of ``tenant`` (of the sessions ``keys``, when given) that best match
    ``query``, best first, each with its score and, with ``options.around``, its neighbours."""
    _check(query, k)
    options = options or SearchOptions()
    ranked = _ranked(source, tenant, query, k, keys, options)[:k]
    if not ranked:
        return []
    return source.fetch(tenant, [ref for ref, _ in ranked], dict(ranked), options.around)


def search_sessions(source: Source, tenant: str, query: str, k: int = 5, *, options: SearchOptions | None = None,
                    depth: int = 50) -> list[tuple[str, float]]:
    """The ``k`` sessions whose messages best match ``query`` (``rank_sessions`` over the best
    ``depth`` messages), best first, as ``(key, score)``."""
    _check(query, k)
    options = options or SearchOptions()
    ranked = _ranked(source, tenant, query, depth, None, options)[:depth]
    return rank_sessions(ranked, k)  # type: ignore[return-value]
