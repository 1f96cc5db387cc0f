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

from langgraph.store.base import BaseStore

__all__ = ["FEED_ROOT", "KEEP", "bump", "changed_since", "meta_namespace"]

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
    """(the feed's item or None, whether it was found at the old location). The old location is
    read until it is found empty once per store and namespace in this process."""
    item = store.get(meta_namespace(namespace), "changes")
    if item is not None:
        return item, False
    with _lock:
        if namespace in _no_legacy.get(store, ()):
            return None, False
    old = store.get(_legacy_namespace(namespace), "changes")
    if old is None:
        with _lock:
            _no_legacy.setdefault(store, set()).add(namespace)
    return old, old is not None


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
    item, _ = _feed(store, namespace)
    value: dict[str, Any] = item.value if item is not None else {"seq": 0, "recent": []}
    now = int(value.get("seq", 0))
    if seq is None or now < seq:
        return now, None
    if now == seq:
        return now, []
    recent = value.get("recent") or []
    if not recent or int(recent[0][0]) > seq + 1:
        return now, None
    return now, list(dict.fromkeys(str(key) for number, key in recent if int(number) > seq))
