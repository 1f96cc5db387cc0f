"""Recall and remember: what an agent reads from long-term memory and how it adds to it.

``recall`` ranks the active memories of the user and the agent for a query (BM25 with
retrieval's tokenizer and over character 4-grams, fused by retrieval's score rule with the store's vector index or the
config's embeddings when given). ``remember`` stores one fact through the same
prefilter, decide and compare-and-set apply steps as a commit (with no model, a conservative
rule), so a restated or changed fact rewrites the memory it is about instead of adding one.
"""

from __future__ import annotations

from typing import Any

from langchain_core.runnables import Runnable

from session_graph._base.flow import Flow, Invoke, sync_and_async
from session_graph._base.ids import new_id, utc_now
from session_graph.errors import ConfigurationError, SessionGraphError, StoreError, StoreUnavailableError
from session_graph.llm.quote import quote
from session_graph.memory.apply import CONFLICT, apply_op, owner_lock
from session_graph.memory.bm25 import word_terms
from session_graph.memory.categories import CATEGORIES, content_hash
from session_graph.memory.config import MemoryConfig, expiry, unavailable
from session_graph.memory.items import clean_terms, expired, terms_text
from session_graph.memory.migrate import warn_unmigrated
from session_graph.memory.plan import create_plan, decide_entries, plan_from_decisions, unseen_rivals
from session_graph.memory.prefilter import GRAMS_WEIGHT, TERMS_WEIGHT, fuse, indexes, nearest, prefilter
from session_graph.memory.prompts import decide_prompt
from session_graph.memory.replies import parse_decisions

__all__ = ["aremember", "cite", "format_memories", "recall", "recall_or_outage", "remember", "store_outage"]


def recall(memory: MemoryConfig, query: str, k: int = 5) -> list[dict[str, Any]]:
    """The ``k`` active memories of ``memory``'s user and agent most relevant to ``query``, best first.

    One BM25 ranking and one ranking by meaning (when the store has a vector index or the
    config embeddings) over every category, fused once (``prefilter.fuse``: retrieval's score
    fusion, each list's first hit kept), so a category's best is not taken for the best overall.
    Where memories keep retrieval terms (other names, synonyms, translations the extraction model
    gave), one more BM25 ranking over their text and terms: a query in other words finds them.
    """
    if not query.strip() or k <= 0:
        return []
    warn_unmigrated(memory)  # a tenant's user with memories only at their place before tenancy: said once
    depth = max(k * 4, 20)
    lexical: list[tuple[str, float]] = []
    variants: list[tuple[str, float]] = []  # character grams: "allergy" finds "allergic"
    expanded: list[tuple[str, float]] = []  # text and retrieval terms
    termed = False
    semantic: list[tuple[str, float]] | None = None
    values: dict[str, dict[str, Any] | None] = {}
    namespaces = [memory.namespace(category) for category in CATEGORIES]
    held = indexes(memory.memory_store, namespaces)  # one read of the categories' change feeds
    for category, namespace, index in zip(CATEGORIES, namespaces, held, strict=True):
        current = index.values  # read per hit: another thread may refresh the shared index meanwhile
        lexical += _live(index.bm25.search(query, limit=depth), category, current, values)
        variants += _live(index.grams.search(query, limit=depth), category, current, values)
        if index.termed:
            termed = True
            expanded += _live(index.with_terms().search(query, limit=depth), category, current, values)
        near = nearest(index, query, depth, memory.embeddings, memory.memory_store, namespace)
        if near is not None:
            semantic = (semantic or []) + _live(near, category, current, values)
    rankings = [sorted(lexical, key=lambda pair: (-pair[1], pair[0]))[:depth],
                sorted(variants, key=lambda pair: (-pair[1], pair[0]))[:depth]]
    weights = [1.0, GRAMS_WEIGHT]
    if termed:
        rankings.append(sorted(expanded, key=lambda pair: (-pair[1], pair[0]))[:depth])
        weights.append(TERMS_WEIGHT)
    if semantic is not None:
        rankings.append(sorted(semantic, key=lambda pair: (-pair[1], pair[0]))[:depth])
        weights.append(1.0)
    return [value for ref, score in fuse(rankings, k, weights=weights) if score > 0 and (value := values[ref]) is not None]


def _live(hits: list[tuple[Any, float]], category: str, current: dict[str, dict[str, Any]],
          values: dict[str, dict[str, Any] | None]) -> list[tuple[str, float]]:
    """``hits`` of one category that are still active and not expired, as ``category/key`` refs;
    each one's value goes into ``values`` (None: expired or gone). Only the hits are looked at,
    so a recall costs what its rankings' depth costs, not a pass over every stored memory."""
    out = []
    for key, score in hits:
        ref = f"{category}/{key}"
        if ref not in values:
            value = current.get(key)
            values[ref] = value if value is not None and not expired(value) else None
        if values[ref] is not None:
            out.append((ref, score))
    return out


def recall_or_outage(memory: MemoryConfig, query: str, k: int = 5) -> tuple[list[dict[str, Any]], StoreUnavailableError | None]:
    """``recall``, with an outage of the memory store (a lost database connection, a timeout)
    turned into ``([], the error as a StoreUnavailableError)``, so an agent's turn can go on
    without recalled memories; what the caller does with the error (log it, record it, raise
    it) is its choice.

    Raises:
        StoreError: the store failed otherwise (a real data error), the store's error attached.
    """
    try:
        return recall(memory, query, k), None
    except Exception as error:
        return [], store_outage(error, "recall from the memory store")


def store_outage(error: Exception, doing: str) -> StoreUnavailableError:
    """``error`` (raised by a memory store while ``doing``) as the retryable ``StoreUnavailableError``
    when the store is down (a lost database connection, a timeout).

    Raises:
        StoreError: the store failed otherwise (a real data error), ``error`` attached.
        SessionGraphError: ``error`` itself, when it is one of ours other than an outage.
    """
    if isinstance(error, StoreUnavailableError):
        return error
    if isinstance(error, SessionGraphError):
        raise error
    down = unavailable(error)
    if down is None and isinstance(error, ConnectionError | TimeoutError):
        down = StoreUnavailableError(f"the memory store could not be reached ({type(error).__name__}: {error}); "
                                     "memory is unavailable until it is back.")
    if down is None:
        raise StoreError(f"{doing} failed ({type(error).__name__}: {error}); the stored "
                         "memories or the store's configuration need a look.") from error
    down.__cause__ = error
    return down


def cite(value: dict[str, Any]) -> str:
    """Where a memory came from: ``session s1, archive_003 (messages m1, m2); tool`` ("" when unknown)."""
    parts = []
    for source in value.get("sources") or ():
        if source.get("session"):
            ids = source.get("message_ids") or []
            parts.append(f"session {source['session']}, {source.get('archive')}" + (f" (messages {', '.join(ids)})" if ids else ""))
        elif source.get("source"):
            parts.append(str(source["source"]))
    return "; ".join(parts)


def format_memories(values: list[dict[str, Any]], limit_chars: int | None = None, *, citations: bool = False,
                    uris: bool = False) -> str:
    """Memories as lines for a prompt (``[category] "abstract": "content"``, with ``citations`` the
    ``[from "..."]`` each came from, with ``uris`` each one's ``memory://`` URI first, so an agent
    can name it to ``forget_memory``), within ``limit_chars``. Stored text is data: each value is
    quoted (``llm.quote``: one line, ending at its quote), so a memory cannot forge lines of the
    system message it is shown in; a URI or category is shown as it is when it is a plain token."""
    lines: list[str] = []
    used = 0
    for value in values:
        where = f"{_token(str(value.get('uri')))} " if uris and value.get("uri") else ""
        line = (f"- {where}[{_token(str(value.get('category')))}] {quote(str(value.get('abstract', '')))}: "
                f"{quote(str(value.get('content', '')))}")
        if citations and cite(value):
            line += f" [from {quote(cite(value))}]"
        if limit_chars is not None and used + len(line) > limit_chars:
            break
        lines.append(line)
        used += len(line) + 1
    return "\n".join(lines)


def _token(text: str) -> str:
    """``text`` as it is when it is one printable token (a URI, a category), else quoted."""
    return text if text.isprintable() and text and not any(ch.isspace() or ch in "\"[]" for ch in text) else quote(text)


def _remember(memory: MemoryConfig, content: str, category: str = "preferences", key: str | None = None,
              abstract: str | None = None, source: str = "remember", *, model: Runnable | None = None,
              terms: Any = None) -> Flow[str]:
    """Store one fact as a commit would: the same prefilter, then the decide model (``model``, else
    ``memory.model``) on what it found, then a compare-and-set write (decided again if the store
    moved meanwhile). Without a model, a conservative rule: the same text is a SKIP; the same key, or
    (when no key is given) a stored fact of the same mergeable category sharing at least half
    the words of the shorter of the two (its key's words count, and two at least) or, where either
    has retrieval terms, of the words one side says found among the other's words or terms (a
    Lenovo notebook / a ThinkPad laptop; terms meeting terms count for nothing), is
    rewritten (its old text kept in the item's history); anything else is a new item.
    ``terms``: retrieval terms to keep with the fact (other names, synonyms, translations), as a
    commit's extraction gives them; without them the fact is found by its own words (and by the
    terms kept with the stored memories it is compared with).

    Returns:
        what happened: ``created``, ``updated``, ``merged`` or ``skipped``.

    Raises:
        ConfigurationError: an unknown category or empty content.
        MemoryReplyError: the decide model's reply could not be used.
    """
    if category not in CATEGORIES:
        raise ConfigurationError(f"unknown memory category {category!r}; the categories are {', '.join(CATEGORIES)}.")
    if not isinstance(content, str) or not content.strip():
        raise ConfigurationError("remember() needs the fact to store as non-empty text.")
    warn_unmigrated(memory)
    decider = model if model is not None else memory.model
    candidate = {"category": category, "key": key, "abstract": abstract or content[:80], "overview": "", "content": content,
                 "terms": clean_terms(terms)}
    namespace = memory.namespace(category)
    store = memory.memory_store
    ref = f"{source}/{new_id()}"
    for _ in range(_ATTEMPTS):
        (found,) = prefilter(store, [candidate], [namespace], embeddings=memory.embeddings)
        hits = {r: h for r, h in found.items() if r.startswith("m")}
        if not hits:
            (op,) = create_plan([candidate], [list(namespace)])
        elif decider is not None:
            reply = yield Invoke(decider, decide_prompt(decide_entries([candidate], [hits])))
            (op,) = plan_from_decisions([candidate], [list(namespace)], [hits], parse_decisions(reply))
        else:
            op = _conservative(candidate, list(namespace), hits, _stored_terms(store, namespace, hits))
        with owner_lock(store, (namespace[0], namespace[1])):
            if op["op"] == "create":
                (now_found,) = prefilter(store, [candidate], [namespace], embeddings=memory.embeddings)
                if unseen_rivals(now_found, op):
                    continue  # another writer stored something like it meanwhile: look again
            now = utc_now()
            op = {**op, "expires_at": expiry(memory, category, now)} if op["op"] == "create" else op
            result = apply_op(store, op, ref, [{"source": source}], now)
        if result != CONFLICT:
            return result
    raise ConfigurationError(f"remember(): the memories near {content[:60]!r} kept changing under concurrent writers "
                             f"({_ATTEMPTS} attempts); try again.")


_ATTEMPTS = 4
remember, aremember = sync_and_async(_remember)
remember.__name__, aremember.__name__ = "remember", "aremember"
aremember.__doc__ = "Async twin of :func:`remember` (the decide model through ``ainvoke``)."


def _stored_terms(store: Any, namespace: tuple[str, ...], hits: dict[str, dict[str, Any]]) -> dict[str, str]:
    """The retrieval terms kept with each hit's item (by key), for the no-model rule."""
    found = {}
    for hit in hits.values():
        item = store.get(namespace, hit["key"]) if hit.get("key") else None
        if item is not None and terms_text(item.value):
            found[hit["key"]] = terms_text(item.value)
    return found


def _conservative(candidate: dict[str, Any], namespace: list[str], hits: dict[str, dict[str, Any]],
                  stored_terms: dict[str, str] | None = None) -> dict[str, Any]:
    """The no-model decision (see ``remember``): words, and with them the retrieval terms of the
    candidate and of each hit's item where there are any (``stored_terms``, by key)."""
    (op,) = create_plan([candidate], [namespace])
    op["seen"] = {h["key"]: h["version"] for h in hits.values()}
    category = candidate["category"]
    same = next((h for h in hits.values() if h.get("hash") == content_hash(candidate["content"])), None)
    if same is not None:
        return {**op, "op": "skip", "key": same["key"], "targets": [same["key"]]}
    if category == "profile" or not CATEGORIES[category].mergeable:
        return op  # a profile line is added to the profile; events and cases never change
    words = set(word_terms(candidate["content"]))
    ours = set(word_terms(terms_text(candidate)))
    for hit in hits.values():
        theirs = set(word_terms(f"{str(hit['key']).replace('_', ' ')} {hit['content']}"))
        their_terms = set(word_terms((stored_terms or {}).get(hit["key"], "")))
        close = _close(words, theirs) or _bridged(words, ours, theirs, their_terms)
        if hit["kind"] == "key" or (close and not candidate.get("key")):  # a key given names its own topic
            return {**op, "op": "update", "key": hit["key"], "targets": [hit["key"]]}
    return op


def _bridged(words: set[str], terms: set[str], their_words: set[str], their_terms: set[str]) -> bool:
    """Two statements of one fact in other words: the words one side says found among the other's
    words or terms (a ThinkPad laptop / a Lenovo notebook, with ``Lenovo, notebook`` as terms),
    as many as ``_close`` asks of the expanded sets. Terms meeting terms do not count: the generic
    ones a model gives many facts of one user (``IDE settings``, ``appearance``) join nothing."""
    shared = (words & (their_words | their_terms)) | (terms & their_words)
    return len(shared) >= 2 and len(shared) >= 0.5 * min(len(words | terms), len(their_words | their_terms))


def _close(ours: set[str], theirs: set[str]) -> bool:
    """Two statements of one fact, by the words (or words and terms) they share: at least half of
    the smaller set's, and two at least."""
    shared = len(ours & theirs)
    return shared >= 2 and shared >= 0.5 * min(len(ours), len(theirs))
