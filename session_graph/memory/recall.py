"""Recall and remember: what an agent reads from long-term memory and how it adds to it.

``recall`` ranks the active memories of the user and the agent for a query (BM25, fused with
the config's embeddings when given). ``remember`` stores one fact through the same
prefilter and apply step as a commit: the same key or the same content never makes a second
item (an existing fact gains a source, a mergeable one is rewritten in place).
"""

from __future__ import annotations

from typing import Any

from session_graph._base.ids import new_id, utc_now
from session_graph.errors import ConfigurationError
from session_graph.memory.apply import apply_op, owner_lock
from session_graph.memory.categories import CATEGORIES, content_hash, memory_namespace
from session_graph.memory.config import MemoryConfig
from session_graph.memory.plan import create_plan
from session_graph.memory.prefilter import _index, _similar, prefilter

__all__ = ["format_memories", "recall", "remember"]


def recall(memory: MemoryConfig, query: str, k: int = 5) -> list[dict[str, Any]]:
    """The ``k`` active memories of ``memory``'s user and agent most relevant to ``query``, best first."""
    if not query.strip() or k <= 0:
        return []
    scored: list[tuple[float, str, dict[str, Any]]] = []
    for category in CATEGORIES:
        namespace = memory_namespace(category, memory.user, memory.agent)
        index = _index(memory.memory_store, namespace)
        for key, score in _similar(index, query, k, memory.embeddings):
            if score > 0:
                scored.append((score, f"{category}/{key}", index.values[key]))
    scored.sort(key=lambda entry: (-entry[0], entry[1]))
    return [value for _, _, value in scored[:k]]


def format_memories(values: list[dict[str, Any]], limit_chars: int | None = None) -> str:
    """Memories as lines for a prompt (``[category] abstract: content``), within ``limit_chars``."""
    lines: list[str] = []
    used = 0
    for value in values:
        line = f"- [{value.get('category')}] {value.get('abstract', '')}: {value.get('content', '')}"
        if limit_chars is not None and used + len(line) > limit_chars:
            break
        lines.append(line)
        used += len(line) + 1
    return "\n".join(lines)


def remember(memory: MemoryConfig, content: str, category: str = "preferences", key: str | None = None,
             abstract: str | None = None, source: str = "remember") -> str:
    """Store one fact; returns what happened (``created``, ``updated``, ``skipped``).

    Raises:
        ConfigurationError: an unknown category or empty content.
    """
    if category not in CATEGORIES:
        raise ConfigurationError(f"unknown memory category {category!r}; the categories are {', '.join(CATEGORIES)}.")
    if not isinstance(content, str) or not content.strip():
        raise ConfigurationError("remember() needs the fact to store as non-empty text.")
    candidate = {"category": category, "key": key, "abstract": abstract or content[:80], "overview": "", "content": content}
    namespace = memory_namespace(category, memory.user, memory.agent)
    store = memory.memory_store
    with owner_lock(store, (namespace[0], namespace[1])):
        (hits,) = prefilter(store, [candidate], [namespace], top_k=0)
        (op,) = create_plan([candidate], [list(namespace)])
        exact = [h for h in hits.values() if h.get("kind") in ("key", "hash")]
        if exact:
            same = next((h for h in exact if h.get("hash") == content_hash(content)), None)
            target = same or exact[0]
            mergeable = CATEGORIES[category].mergeable
            op = {**op, "op": "skip" if same is not None or not mergeable else "update", "targets": [target["key"]],
                  "seen": {target["key"]: target.get("version", 1)}}
        return apply_op(store, op, f"{source}/{new_id()}", [{"source": source}], utc_now())
