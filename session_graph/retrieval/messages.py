"""Search over one session's messages in memory (``Session.search``).

``MessageSource`` is a ``retrieval.search.Source`` over the messages a session holds: it
indexes each message once (O(new messages) per search after appends) and rebuilds only when
the history was replaced (``clear``, ``restore``). A session loaded lazily holds its first
message and its window; its middle stays in the store, and ``session_search`` asks the
store's index for that part (bound by the ``SessionManager`` with ``bind_store``) instead
of paging it in.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
import json
import threading
from typing import Any
import weakref

from langchain_core.messages import BaseMessage

from session_graph._base.ids import micros_not_before
from session_graph.retrieval.bm25 import Bm25Index
from session_graph.retrieval.hits import SearchHit
from session_graph.retrieval.search import SearchOptions, search
from session_graph.retrieval.tokenize import terms

__all__ = ["MessageSource", "PooledSource", "bind_store", "message_text", "session_search", "substring_search"]

Ref = tuple[str, int]
_sources: weakref.WeakKeyDictionary[Any, MessageSource] = weakref.WeakKeyDictionary()
_stores: weakref.WeakKeyDictionary[Any, tuple[Any, str]] = weakref.WeakKeyDictionary()
_pools: weakref.WeakKeyDictionary[MessageSource, PooledSource] = weakref.WeakKeyDictionary()  # by the session's held source
_lock = threading.Lock()


def message_text(message: BaseMessage) -> str:
    """The searchable text of a message: its text parts and its tool calls' names and arguments."""
    content = message.content
    parts = [content] if isinstance(content, str) else [
        p if isinstance(p, str) else str(p.get("text", "")) for p in content
        if isinstance(p, str) or (isinstance(p, dict) and p.get("type") == "text")]
    for call in getattr(message, "tool_calls", None) or ():
        parts.append(f"{call.get('name', '')} {json.dumps(call.get('args', {}), ensure_ascii=False, default=str)}")
    return "\n".join(p for p in parts if p)


def _role(message: BaseMessage) -> str:
    return {"human": "user", "ai": "assistant"}.get(message.type, message.type)


class MessageSource:
    """A ``Source`` over positions of one message list (the key is the session id)."""

    def __init__(self, key: str) -> None:
        self.key = key
        self.lock = threading.Lock()  # a sync and the search that reads it, one at a time (``session_search``)
        self.index = Bm25Index()
        self._held: dict[int, BaseMessage] = {}
        self._digests: dict[int, int] = {}  # position -> hash of the text indexed (a message rewritten under its id differs)
        self._history: Any = None
        self._times: Mapping[str, str] = {}

    def sync(self, history: Any, times: Mapping[str, str]) -> None:
        """Index what ``history`` holds now: O(new messages) after appends (the same list, its
        first and last indexed messages still in place), a rebuild when it was replaced."""
        n = len(history)
        start = getattr(history, "start", 0)  # a lazy history holds 0 and start..n-1 until its middle is read
        last = max(self._held, default=-1)
        same = (history is self._history and last < n and self._held.get(0) is (history[0] if n else None)
                and (last < 0 or history[last] is self._held[last]))
        if not same:
            self.index, self._held, self._digests, self._history = Bm25Index(), {}, {}, history
            last = -1
        if start >= 2:
            fresh: Iterable[int] = [p for p in (0, *range(max(start, last + 1), n)) if p not in self._held]
        else:
            fresh = [p for p in range(n) if p not in self._held] if len(self._held) != last + 1 else range(last + 1, n)
        for position in fresh:
            message = history[position]
            text = message_text(message)
            self.index.add((self.key, position), terms(text), owner=self.key)
            self._held[position], self._digests[position] = message, hash(text)
        self._times = times

    def rank(self, tenant: str, words: list[str], limit: int, *, keys: list[str] | None = None,
             since: str | None = None, until: str | None = None) -> list[tuple[Ref, float]]:
        allow = None
        if since is not None or until is not None:
            allow = self.index.mask(_within(self._stamps([self.index.key_of(d)[1] for d in range(self.index.ids)]), since, until))
        return self.index.search(words, limit, allow=allow)  # type: ignore[return-value]

    def _ts(self, position: int) -> str:
        message = self._held.get(position)
        return self._times.get(message.id or "", "") if message is not None else ""

    def _stamps(self, positions: list[int]) -> list[int | str]:
        """``_ts`` of each position, without making text where the session keeps a stamp as a
        number (``resize/arrivals.Arrivals.instants``: microseconds; compared with the bounds'
        instants by ``_within``)."""
        times, held = self._times, self._held
        instants = getattr(times, "instants", None)
        if instants is None:
            return [self._ts(p) for p in positions]
        messages = [held.get(p) for p in positions]
        numbers = instants([m.id or "" if m is not None else "" for m in messages])
        return [n if n is not None else times.get(m.id or "", "") if m is not None else "" for n, m in zip(numbers, messages, strict=True)]

    def fetch(self, tenant: str, refs: list[Ref], score: dict[Ref, float], around: int = 0) -> list[SearchHit]:
        def hit(position: int, value: float = 0.0) -> SearchHit | None:
            message = self._held.get(position)
            if message is None:
                return None
            return SearchHit(self.key, position, _role(message), message_text(message), self._ts(position), message.id, value)

        hits = []
        for ref in refs:
            found = hit(ref[1], score.get(ref, 0.0))
            if found is None:
                continue
            if around:
                near = tuple(h for s in range(ref[1] - around, ref[1] + around + 1) if s != ref[1] and (h := hit(s)) is not None)
                found = SearchHit(found.key, found.seq, found.role, found.text, found.ts, found.message_id, found.score, near)
            hits.append(found)
        return hits

    def documents(self, tenant: str, keys: list[str] | None = None) -> list[tuple[Ref, str | None, str, int | None]]:
        # a dense index's tag of each: its id, time and the hash of its text (a message replaced under its id,
        # LangGraph's way of editing one, is embedded again)
        return [((self.key, p), m.id, self._ts(p), self._digests.get(p)) for p, m in sorted(self._held.items())]

    @property
    def vector_scope(self) -> tuple[str, str | None]:
        """What a dense index keeps one set of vectors for (``retrieval.dense``): this session's
        messages, told apart from another history under the same session id (another tenant's
        ``"main"``, a cleared one) by the id of its first message, so searches that alternate
        between them do not embed each again; a reloaded session has the same first message."""
        first = self._held.get(0)
        return self.key, first.id if first is not None else None

    def documents_since(self, tenant: str, mark: Any = None) -> tuple[Any, list[tuple[Ref, str | None, str, int | None]] | None]:
        """``(the mark now, the messages indexed since mark)``, as the JSONL store's index answers
        (``stores.search_state.documents_since``): None for the messages when ``mark`` is None,
        of another index (the history was replaced), or messages were removed since."""
        index = self.index
        now = (weakref.ref(index), index.ids, index.ids - len(index))
        if mark is None or mark[0]() is not index or mark[2] != now[2] or mark[1] > now[1]:
            return now, None
        return now, [(ref, message.id, self._ts(ref[1]), self._digests.get(ref[1])) for ref in index.keys_since(mark[1])  # type: ignore[index]
                     if (message := self._held.get(ref[1])) is not None]  # type: ignore[index]


class PooledSource(MessageSource):
    """The messages a session holds and a store index's best candidates for the part it does not
    hold, in one BM25 index, so every score comes from the same statistics (one ranking: a
    store's scores and an in-memory index's are not comparable, their corpora differ).

    Kept per session (``session_search``) and brought up to date by ``refresh``: a held message
    is indexed again only when it is another message than before, a candidate only when it is
    new to the pool (its terms cached by message id and text), and one that left the pool is
    removed (the index's statistics stay those of a rebuilt one), so a search costs what changed.
    """

    def __init__(self, held: MessageSource, candidates: list[SearchHit] | None = None) -> None:
        super().__init__(held.key)
        self.lock = threading.Lock()  # refresh and the search that reads it, one search at a time
        self._mirrored: Any = None  # the held source's index this pool follows
        self._stored: dict[int, SearchHit] = {}
        self._words: dict[tuple[str | None, str], list[str]] = {}
        self.refresh(held, candidates or [])

    def _terms(self, message_id: str | None, text: str) -> list[str]:
        words = self._words.get((message_id, text))
        if words is None:
            words = self._words[(message_id, text)] = terms(text)
        return words

    def refresh(self, held: MessageSource, candidates: list[SearchHit]) -> None:
        """Index what ``held`` holds now and these store ``candidates`` (nothing else)."""
        if held.index is not self._mirrored or self.index.ids > 2 * len(self.index) + 256:
            # another history, or many removals: a new index from the cached terms
            self.index, self._held, self._digests, self._stored, self._mirrored = Bm25Index(), {}, {}, {}, held.index
            if len(self._words) > 4 * (len(held._held) + len(candidates)) + 256:
                self._words = {}
        self._times = held._times
        for position in [p for p in self._held if p not in held._held]:
            self.index.remove((self.key, position))
            del self._held[position]
            self._digests.pop(position, None)
        for position, message in held._held.items():
            if self._held.get(position) is not message:
                self._stored.pop(position, None)
                text = message_text(message)
                self.index.add((self.key, position), self._terms(message.id, text), owner=self.key)
                self._held[position], self._digests[position] = message, hash(text)
        wanted = {hit.seq: hit for hit in candidates if hit.seq not in held._held}
        for position, old in list(self._stored.items()):
            new = wanted.get(position)
            if new is None or (new.message_id, new.text) != (old.message_id, old.text):
                self.index.remove((self.key, position))
                del self._stored[position]
        for position, hit in wanted.items():
            if position not in self._stored:
                self.index.add((self.key, position), self._terms(hit.message_id, hit.text), owner=self.key)
            self._stored[position] = hit  # this search's hit (its neighbours, its time)

    def _ts(self, position: int) -> str:
        hit = self._stored.get(position)
        return hit.ts if hit is not None else super()._ts(position)

    def _stamps(self, positions: list[int]) -> list[int | str]:
        stored = self._stored
        found = super()._stamps(positions)
        return [stored[p].ts if p in stored else t for p, t in zip(positions, found, strict=True)] if stored else found

    def fetch(self, tenant: str, refs: list[Ref], score: dict[Ref, float], around: int = 0) -> list[SearchHit]:
        held = {ref: hit for hit in super().fetch(tenant, [r for r in refs if r[1] in self._held], score, around)
                for ref in [(hit.key, hit.seq)]}
        hits = []
        for ref in refs:
            stored = self._stored.get(ref[1])
            if stored is not None:  # the store's hit (its neighbours too), scored by this index
                hits.append(SearchHit(stored.key, stored.seq, stored.role, stored.text, stored.ts, stored.message_id,
                                      score.get(ref, 0.0), stored.neighbours if around else ()))
            elif ref in held:
                hits.append(held[ref])
        return hits

    documents_since = None  # type: ignore[assignment]
    """Made per search from what the store's index found: a dense index is handed its documents
    (``DenseIndex.search``, which embeds only those it does not hold)."""

    def documents(self, tenant: str, keys: list[str] | None = None) -> list[tuple[Ref, str | None, str, int | None]]:
        stored = [((self.key, p), h.message_id, h.ts, hash(h.text)) for p, h in self._stored.items()]
        return sorted([*super().documents(tenant, keys), *stored])


def _within(stamps: list[Any], since: str | None, until: str | None) -> Iterable[bool]:
    """Whether each stamp is in ``since <= stamp < until`` as text compares: a number (an
    instant, ``stamp_at``'s text) against the bounds' instants, read once
    (``micros_not_before``: the same answer as its text's), any other stamp as text."""
    low = micros_not_before(since) if since is not None else None
    high = micros_not_before(until) if until is not None else None
    return [(low is None or s >= low) and (high is None or s < high) if type(s) is int
            else (since is None or s >= since) and (until is None or s < until) for s in stamps]


def bind_store(session: Any, index: Any, tenant: str) -> None:
    """Let ``session_search`` ask ``index`` (a store's ``search_index``) for the part of the
    session's history that stays in the store (what a ``SessionManager`` does on load)."""
    with _lock:
        _stores[session] = (index, tenant)


def session_search(session: Any, query: str, k: int = 10, options: SearchOptions | None = None) -> list[SearchHit]:
    """The ``k`` best messages of the session's whole history (window, evicted, archived).

    Thread-safe: ``asearch`` runs in worker threads, and an agent may search while another
    thread appends. The session's index is synced and read under its source's lock, so no
    message is indexed twice or missed, and a search still syncing a history that ``clear``
    or ``restore`` replaced never writes its messages into the new history's index. A store's
    index is asked outside the lock (it reads the store, not this index)."""
    history = session.full_chat_history
    with _lock:
        source = _sources.get(session)
        if source is None or source.key != session.id:
            source = _sources[session] = MessageSource(session.id)
        bound = _stores.get(session)
    with source.lock:
        source.sync(history, session.arrived_at)
        start = getattr(history, "start", 0)
        if start < 2 or bound is None:
            return search(source, "", query, k, options=options)
    # the middle (1 .. start - 1) is in the store: its index finds candidates
    index, tenant = bound
    options = options or SearchOptions()
    depth = max(2 * k, options.candidates)
    found = search(index, tenant, query, depth + len(history) - start + 1, keys=[session.id],
                   options=SearchOptions(around=options.around, since=options.since, until=options.until, bridge=options.bridge))
    candidates = [h for h in found if 1 <= h.seq < start][:depth]
    with source.lock:  # the pool reads the held source: another search's sync waits (locks always in this order)
        with _lock:
            pool = _pools.get(source)
        if pool is None:
            pool = PooledSource(source)
            with _lock:
                pool = _pools.setdefault(source, pool)
        with pool.lock:
            pool.refresh(source, candidates)
            return search(pool, "", query, k, options=options)


def substring_search(session: Any, query: str, k: int = 10) -> list[SearchHit]:
    """The first ``k`` messages of the history containing ``query`` (case-insensitive), oldest
    first (reads a lazily loaded session's middle)."""
    if not isinstance(query, str) or not query:
        raise ValueError(f"search needs a non-empty query string, got {query!r:.60}.")
    needle, hits = query.casefold(), []
    for position, message in enumerate(session.full_chat_history):
        text = message_text(message)
        if needle in text.casefold():
            hits.append(SearchHit(session.id, position, _role(message), text, session.arrived_at.get(message.id or "", ""), message.id))
            if len(hits) >= k:
                break
    return hits
