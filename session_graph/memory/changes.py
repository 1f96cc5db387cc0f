"""A namespace's change feed: which memory items were written since a reader last looked.

Every write of a memory item through the apply step (or ``forget``) bumps a counter kept in
one small item per namespace, ``("memory_changes", kind, owner, category)`` / ``"changes"``,
with the keys of the newest ``KEEP`` writes. The feed lives under a root of its own, derived
from the memories' namespace (itself derived from the config, never read from data), so a
search of a user's prefix (``("user", "alice")``) lists memories, not bookkeeping. Stores
written before kept it at ``(kind, owner, "memories_meta", category)``: a reader that finds no
feed reads that old item (so its counter goes on where it was), and the next write moves it. A process's prefilter index reads that one item
per commit: the same counter, nothing to do; a few more, re-read those keys; more than it
keeps, list the namespace again. So a commit's prefilter costs the same at 100 and at 10,000
stored memories, and stays right across processes sharing a store. Bumps happen under the
owner's lock, with the write they record.
"""

from __future__ import annotations

import threading
from typing import Any
import weakref

from langgraph.store.base import BaseStore, GetOp

__all__ = ["FEED_ROOT", "KEEP", "bump", "changed_since", "changed_since_many", "meta_namespace"]

KEEP = 512
FEED_ROOT = "memory_changes"


def meta_namespace(namespace: tuple[str, ...]) -> tuple[str, ...]:
    """Where a memories namespace's change feed lives (outside every owner's prefix)."""
    return (FEED_ROOT, namespace[0], namespace[1], *namespace[3:])


def _legacy_namespace(namespace: tuple[str, ...]) -> tuple[str, ...]:
    """Where stores written before kept the feed (under the owner's prefix)."""
    return (namespace[0], namespace[1], "memories_meta", *namespace[3:])


_no_legacy: weakref.WeakKeyDictionary[Any, set[tuple[str, ...]]] = weakref.WeakKeyDictionary()
_lock = threading.Lock()


def _feed(store: BaseStore, namespace: tuple[str, ...]) -> tuple[Any, bool]:
    """(the feed's item or None, whether it was found at the old location)."""
    return _feeds(store, [namespace])[0]


def _feeds(store: BaseStore, namespaces: list[tuple[str, ...]]) -> list[tuple[Any, bool]]:
    """``_feed`` of several namespaces in one ``batch`` (one round trip on a database store). The
    old location is read (a second batch) until it is found empty once per store and namespace
    in this process."""
    items = store.batch([GetOp(meta_namespace(namespace), "changes") for namespace in namespaces])
    with _lock:
        absent = _no_legacy.get(store, set())
        legacy = [n for n, (namespace, item) in enumerate(zip(namespaces, items, strict=True))
                  if item is None and namespace not in absent]
    found: list[tuple[Any, bool]] = [(item, False) for item in items]
    if legacy:
        olds = store.batch([GetOp(_legacy_namespace(namespaces[n]), "changes") for n in legacy])
        for n, old in zip(legacy, olds, strict=True):
            found[n] = (old, old is not None)
            if old is None:
                with _lock:
                    _no_legacy.setdefault(store, set()).add(namespaces[n])
    return found


def bump(store: BaseStore, namespace: tuple[str, ...], key: str) -> None:
    """Record a write of ``key`` (call under the owner's lock, beside the write); a feed still at
    the old location moves to the new one (the counter goes on)."""
    item, legacy = _feed(store, namespace)
    value = dict(item.value) if item is not None else {"seq": 0, "recent": []}
    seq = int(value.get("seq", 0)) + 1
    recent = [*(value.get("recent") or [])[-(KEEP - 1) :], [seq, key]]
    store.put(meta_namespace(namespace), "changes", {"seq": seq, "recent": recent}, index=False)
    if legacy:
        store.delete(_legacy_namespace(namespace), "changes")


def changed_since(store: BaseStore, namespace: tuple[str, ...], seq: int | None) -> tuple[int, list[str] | None]:
    """(the counter now, the keys written since ``seq``); None for the keys when the feed does
    not reach back that far (or ``seq`` is None): the reader must list the namespace."""
    return changed_since_many(store, [namespace], [seq])[0]


def changed_since_many(store: BaseStore, namespaces: list[tuple[str, ...]],
                       seqs: list[int | None]) -> list[tuple[int, list[str] | None]]:
    """``changed_since`` of several namespaces (an owner's categories) in one read of their feeds."""
    return [_since(item.value if item is not None else {"seq": 0, "recent": []}, seq)
            for (item, _), seq in zip(_feeds(store, namespaces), seqs, strict=True)]


def _since(value: dict[str, Any], seq: int | None) -> tuple[int, list[str] | None]:
    now = int(value.get("seq", 0))
    if seq is None or now < seq:
        return now, None
    if now == seq:
        return now, []
    recent = value.get("recent") or []
    if not recent or int(recent[0][0]) > seq + 1:
        return now, None
    return now, list(dict.fromkeys(str(key) for number, key in recent if int(number) > seq))
