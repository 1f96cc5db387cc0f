"""Applying a plan: one idempotent put per item, never a delete of content.

- CREATE puts a new item at its deterministic key. If that key holds an active item with
  the same content it becomes a SKIP; with other content (a different topic whose slug
  clashes) the key gets a short hash suffix.
- UPDATE copies the old value to the history namespace (``key@v{n}``, not searched), then
  rewrites the item in place: version + 1, the merged content, sources unioned.
- MERGE keeps one survivor (most ``active_count``, then the oldest), gives it the merged
  content and marks every other target ``superseded`` (out of search, kept in place).
- SKIP adds the candidate's source and ``last_confirmed_at``.
- Every op keeps the candidate's retrieval ``terms`` with the item it writes (unioned with
  those it had, the newest first): the words a restatement used find the item next time.
- events and cases are never rewritten; the profile stays within its bound (the oldest
  bullets move to the history namespace).

Each put records the op's reference (``archive_003#7``) in ``applied``; replaying an op
whose reference is there changes nothing, so a retry after a crash between any two puts
ends with the same store as a clean run. If a target changed since the decision was
made (another session or process wrote it, or an earlier op of the same batch), the op
writes nothing and returns ``CONFLICT``: the write step decides it again on what is stored
now (compare-and-set on the item's version, under the owner's lock), so two updates of one
fact never end up side by side and racing commits converge on one item per key.
"""

from __future__ import annotations

from collections.abc import Iterator
import contextlib
import hashlib
import logging
import sqlite3
import threading
from typing import Any

from langgraph.store.base import BaseStore

from session_graph._base.files import lock_file, unlock_file
from session_graph.memory.categories import CATEGORIES, content_hash, history_namespace, normalize
from session_graph.memory.changes import bump
from session_graph.memory.items import INDEX_FIELDS, add_sources, applied, clean_terms, new_value, record_op

__all__ = ["CONFLICT", "apply_op", "bound_profile", "index_fields", "owner_lock"]

CONFLICT = "conflict"
"""What ``apply_op`` returns when the store moved since the decision; nothing was written."""

log = logging.getLogger(__name__)

_locks: dict[tuple[int, tuple[str, str]], threading.Lock] = {}
_locks_guard = threading.Lock()


@contextlib.contextmanager
def owner_lock(store: BaseStore, owner: tuple[str, str]) -> Iterator[None]:
    """Serialise edits of one owner's memories, across processes where the store is shared:
    the file store's own lock; for LangGraph's SqliteStore a lock file beside its database; for
    its PostgresStore (on one connection) an advisory lock; in-process otherwise (InMemoryStore)."""
    file_lock = getattr(store, "owner_lock", None)
    if file_lock is not None:
        with file_lock(owner):
            yield
        return
    with _locks_guard:
        lock = _locks.setdefault((id(store), owner), threading.Lock())
    with lock, _shared_lock(store, owner):
        yield


@contextlib.contextmanager
def _shared_lock(store: BaseStore, owner: tuple[str, str]) -> Iterator[None]:
    """The cross-process half of ``owner_lock`` for LangGraph's SQL stores (nothing for others)."""
    name = hashlib.sha256("\x00".join(owner).encode()).hexdigest()
    conn = getattr(store, "conn", None)
    if isinstance(conn, sqlite3.Connection):
        rows = conn.execute("PRAGMA database_list").fetchall()
        path = next((row[2] for row in rows if row[1] == "main" and row[2]), None)
        if path is None:  # an in-memory database is one process's
            yield
            return
        with open(f"{path}.session_graph-{name[:16]}.lock", "a") as handle:
            lock_file(handle)
            try:
                yield
            finally:
                unlock_file(handle)
        return
    if type(conn).__module__.startswith("psycopg") and callable(getattr(conn, "execute", None)):
        key = int(name[:15], 16)  # fits a signed bigint
        conn.execute("SELECT pg_advisory_lock(%s)", (key,))
        try:
            yield
        finally:
            conn.execute("SELECT pg_advisory_unlock(%s)", (key,))
        return
    yield


def index_fields(value: dict[str, Any]) -> list[str]:
    """The fields a vector-indexed store embeds: abstract and content, or the content alone when
    the two are the same text (LangGraph's InMemoryStore fails on one text sent twice, langgraph#8822)."""
    same = " ".join(str(value.get("abstract") or "").split()) == " ".join(str(value.get("content") or "").split())
    return ["content"] if same or not str(value.get("abstract") or "").strip() else list(INDEX_FIELDS)


def _put(store: BaseStore, namespace: tuple[str, ...], key: str, value: dict[str, Any], *, index: bool = True) -> None:
    store.put(namespace, key, value, index=index_fields(value) if index and value.get("status") == "active" else False)
    bump(store, namespace, key)  # the namespace's change feed: other processes' indexes re-read this key


def _keep_history(store: BaseStore, namespace: tuple[str, ...], key: str, old: dict[str, Any]) -> None:
    store.put(history_namespace(namespace), f"{key}@v{old.get('version', 1)}", old, index=False)


def bound_profile(content: str, max_items: int, max_chars: int) -> tuple[str, str]:
    """(kept, moved): the newest bullets within the bound, and the older ones that do not fit."""
    lines = [line for line in content.splitlines() if line.strip()]
    kept: list[str] = []
    size = 0
    for line in reversed(lines):
        if len(kept) >= max_items or size + len(line) + 1 > max_chars:
            break
        kept.append(line)
        size += len(line) + 1
    kept.reverse()
    moved = lines[: len(lines) - len(kept)]
    return "\n".join(kept), "\n".join(moved)


def _with_terms(value: dict[str, Any], terms: Any) -> dict[str, Any]:
    """``value`` with ``terms`` (a candidate's) unioned into its own, the newest first, bounded."""
    merged = clean_terms([clean_terms(terms), clean_terms(value.get("terms"))])
    return {**value, "terms": merged} if merged or "terms" in value else value


def _bullets(text: str) -> list[str]:
    return [line if line.lstrip().startswith(("-", "*")) else f"- {line.strip()}" for line in text.splitlines() if line.strip()]


def _rewrite(
    store: BaseStore, namespace: tuple[str, ...], key: str, old: dict[str, Any], content: str, abstract: str | None,
    sources: list[dict[str, Any]], op_ref: str, now: str, profile: tuple[int, int], extra: dict[str, Any] | None = None,
    terms: Any = None,
) -> dict[str, Any]:
    _keep_history(store, namespace, key, old)
    if key == "profile" and namespace[3] == "profile":
        content, moved = bound_profile(content, *profile)
        if moved:
            store.put(history_namespace(namespace), f"profile@v{old.get('version', 1)}-overflow",
                      {**old, "content": moved, "status": "overflow"}, index=False)
    value = add_sources({**old, "content": content, "abstract": abstract or old.get("abstract", ""),
                         "version": int(old.get("version", 1)) + 1, "hash": content_hash(content), "updated_at": now,
                         "last_confirmed_at": now, **(extra or {})}, sources)
    value = record_op(_with_terms(value, terms), op_ref)
    _put(store, namespace, key, value)
    return value


def apply_op(
    store: BaseStore, op: dict[str, Any], op_ref: str, sources: list[dict[str, Any]], now: str,
    profile: tuple[int, int] = (30, 2000),
) -> str:
    """Apply one plan op; returns what happened (``created``, ``updated``, ``merged``, ``skipped``, ``replayed``,
    or ``CONFLICT``: the store moved since the decision and nothing was written).

    Args:
        store: the memory store.
        op: a plan op (see ``plan.py``).
        op_ref: this op's reference (``archive_003#7``), recorded on every item it touches.
        sources: where the candidate came from.
        now: the time to stamp.
        profile: the profile's bound (max bullets, max chars).
    """
    namespace = tuple(op["namespace"])
    category = op["category"]
    kind = op["op"]
    content = op["content"]
    log.debug("memory op %s: %s %s in %s", op_ref, kind, op.get("key"), "/".join(namespace))
    if kind == "create" and category == "profile":
        old = store.get(namespace, "profile")
        if old is None or old.value.get("status") != "active":
            kind, content = "create", "\n".join(_bullets(content))
        else:
            if applied(old.value, op_ref):
                return "replayed"
            if "profile" not in (op.get("seen") or {}):
                return CONFLICT  # the profile appeared since the decision: decide again with what it says
            have = {normalize(line.lstrip("-* ")) for line in old.value["content"].splitlines()}
            fresh = [b for b in _bullets(content) if normalize(b.lstrip("-* ")) not in have]
            if not fresh:
                return _skip(store, namespace, "profile", old.value, sources, op_ref, now, op.get("terms"))
            _rewrite(store, namespace, "profile", old.value, "\n".join([old.value["content"], *fresh]), None, sources,
                     op_ref, now, profile, terms=op.get("terms"))
            return "updated"
    if kind == "create":
        key = op["key"]
        for _ in range(3):
            old = store.get(namespace, key)
            if old is None:
                value = new_value(namespace, key, category, op["abstract"], op.get("overview", ""), content, sources, op_ref, now,
                                  op.get("terms"))
                if op.get("expires_at"):
                    value["expires_at"] = op["expires_at"]  # an event with a TTL (MemoryConfig.event_ttl)
                if category == "profile":
                    value["content"], _ = bound_profile(content, *profile)
                _put(store, namespace, key, value)
                return "created"
            if applied(old.value, op_ref):
                return "replayed"
            if old.value.get("status") == "active" and old.value.get("hash") == content_hash(content):
                return _skip(store, namespace, key, old.value, sources, op_ref, now, op.get("terms"))
            if old.value.get("status") == "active" and key not in (op.get("seen") or {}) and CATEGORIES[category].mergeable:
                return CONFLICT  # written since the decision (another session, another process): decide again
            key = f"{op['key']}_{content_hash(content)[:6]}"  # shown, and decided a different topic under the same slug
        return "replayed"
    targets = list(dict.fromkeys(op["targets"]))
    olds = {key: store.get(namespace, key) for key in targets}
    present = {key: item.value for key, item in olds.items() if item is not None}
    if any(applied(value, op_ref) for value in present.values()) and kind != "merge":
        return "replayed"
    if kind in ("update", "merge") and not any(applied(v, op_ref) for v in present.values()) and _moved(op, present):
        return CONFLICT  # a target changed since the decision: never concatenate, decide again on what is stored
    if kind == "skip":
        key = targets[0]
        if key not in present:  # gone meanwhile: keep the fact
            return apply_op(store, {**op, "op": "create", "key": key}, op_ref, sources, now, profile)
        return _skip(store, namespace, key, present[key], sources, op_ref, now, op.get("terms"))
    if not CATEGORIES[category].mergeable:  # guarded by plan validation; never rewrite an event or case
        return "replayed"
    if kind == "update":
        key = targets[0]
        if key not in present:
            return apply_op(store, {**op, "op": "create", "key": key}, op_ref, sources, now, profile)
        old = present[key]
        _rewrite(store, namespace, key, old, content, op.get("abstract"), sources, op_ref, now, profile, terms=op.get("terms"))
        return "updated"
    return _merge(store, namespace, op, present, op_ref, sources, now, profile)


def _moved(op: dict[str, Any], present: dict[str, dict[str, Any]]) -> bool:
    """Whether a target the decision saw (at ``seen[key]``) has another version now."""
    seen = op.get("seen") or {}
    return any(key in seen and int(value.get("version", 1)) != int(seen[key]) for key, value in present.items())


def _skip(store: BaseStore, namespace: tuple[str, ...], key: str, old: dict[str, Any], sources: list[dict[str, Any]],
          op_ref: str, now: str, terms: Any = None) -> str:
    value = _with_terms(add_sources({**old, "last_confirmed_at": now}, sources), terms)
    _put(store, namespace, key, record_op(value, op_ref))
    return "skipped"


def _merge(store: BaseStore, namespace: tuple[str, ...], op: dict[str, Any], present: dict[str, dict[str, Any]],
           op_ref: str, sources: list[dict[str, Any]], now: str, profile: tuple[int, int]) -> str:
    live = {k: v for k, v in present.items() if v.get("status") == "active" or applied(v, op_ref)}
    if not live:
        return apply_op(store, {**op, "op": "create", "key": op["targets"][0]}, op_ref, sources, now, profile)
    survivor = min(live, key=lambda k: (-int(live[k].get("active_count", 0)), live[k].get("created_at", ""), k))
    others = [k for k in live if k != survivor]
    value = live[survivor]
    if not applied(value, op_ref):
        extra = {"supersedes": sorted({*value.get("supersedes", []), *others}),
                 "active_count": sum(int(v.get("active_count", 0)) for v in live.values())}
        merged_terms = [op.get("terms"), *(live[k].get("terms") for k in others)]
        _rewrite(store, namespace, survivor, value, op["content"], op.get("abstract"), sources, op_ref, now, profile, extra,
                 merged_terms)
    for key in others:
        old = live[key]
        if applied(old, op_ref):
            continue
        _put(store, namespace, key, record_op({**old, "status": "superseded", "superseded_by": survivor, "updated_at": now},
                                               op_ref), index=False)
    return "merged"
