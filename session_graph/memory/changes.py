"""A namespace's change feed: which memory items were written since a reader last looked.

Every write of a memory item through the apply step (or ``forget``) bumps a counter kept in
one small item per namespace, with the keys of the newest ``KEEP`` writes. An owner's feeds
share one namespace, ``("memory_changes", kind, owner)``, one key per category
(``feed_location``), so a reader gets all of them in one ``batch`` that a database store
answers with one query (LangGraph's ``PostgresStore`` runs one query per namespace of a
batch). The feeds live under a root of their own, derived from the memories' namespace
(itself derived from the config, never read from data), so a search of a user's prefix
(``("user", "alice")``) lists memories, not bookkeeping. Stores written before kept a feed at
``("memory_changes", kind, owner, category)`` / ``"changes"``, or earlier at
``(kind, owner, "memories_meta", category)``: a reader that finds no feed reads those old items
(so its counter goes on where it was), and the next write moves it. A process's prefilter
index reads the feeds once per commit or recall: the same counter, nothing to do; a few more,
re-read those keys; more than it keeps, list the namespace again. So a commit's prefilter
costs the same at 100 and at 10,000 stored memories, and stays right across processes sharing
a store. Bumps happen under the owner's lock, with the write they record.
"""

from __future__ import annotations

import threading
from typing import Any
import weakref

from langgraph.store.base import BaseStore, GetOp

__all__ = ["FEED_ROOT", "KEEP", "bump", "changed_since", "changed_since_many", "feed_location", "meta_namespace"]

KEEP = 512
FEED_ROOT = "memory_changes"


def feed_location(namespace: tuple[str, ...]) -> tuple[tuple[str, ...], str]:
    """Where a memories namespace's change feed lives: its owner's feed namespace (outside every
    owner's prefix) and a key of its own."""
    return (FEED_ROOT, namespace[0], namespace[1]), "changes-" + "-".join(namespace[3:])


def meta_namespace(namespace: tuple[str, ...]) -> tuple[str, ...]:
    """The namespace of the owner's change feeds (``feed_location``)."""
    return feed_location(namespace)[0]


def _legacy_locations(namespace: tuple[str, ...]) -> list[tuple[tuple[str, ...], str]]:
    """Where stores written before kept the feed: a namespace per category, then under the owner's prefix."""
    return [((FEED_ROOT, namespace[0], namespace[1], *namespace[3:]), "changes"),
            ((namespace[0], namespace[1], "memories_meta", *namespace[3:]), "changes")]


_no_legacy: weakref.WeakKeyDictionary[Any, set[tuple[str, ...]]] = weakref.WeakKeyDictionary()
_lock = threading.Lock()


def _feed(store: BaseStore, namespace: tuple[str, ...]) -> tuple[Any, tuple[tuple[str, ...], str] | None]:
    """(the feed's item or None, the old location it was found at, or None)."""
    return _feeds(store, [namespace])[0]


def _feeds(store: BaseStore, namespaces: list[tuple[str, ...]]) -> list[tuple[Any, tuple[tuple[str, ...], str] | None]]:
    """``_feed`` of several namespaces in one ``batch`` (one query on a database store: an
    owner's feeds share a namespace). The old locations are read (a second batch) until they
    are found empty once per store and namespace in this process."""
    items = store.batch([GetOp(*feed_location(namespace)) for namespace in namespaces])
    with _lock:
        absent = _no_legacy.get(store, set())
        missing = [n for n, (namespace, item) in enumerate(zip(namespaces, items, strict=True))
                   if item is None and namespace not in absent]
    found: list[tuple[Any, tuple[tuple[str, ...], str] | None]] = [(item, None) for item in items]
    if missing:
        places = [place for n in missing for place in _legacy_locations(namespaces[n])]
        olds = store.batch([GetOp(*place) for place in places])
        for number, n in enumerate(missing):
            pairs = list(zip(places[2 * number : 2 * number + 2], olds[2 * number : 2 * number + 2], strict=True))
            place, old = next(((p, o) for p, o in pairs if o is not None), (None, None))
            found[n] = (old, place)
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
    store.put(*feed_location(namespace), {"seq": seq, "recent": recent}, index=False)
    if legacy is not None:
        store.delete(*legacy)


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
