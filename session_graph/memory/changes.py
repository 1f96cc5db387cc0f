"""A namespace's change feed: which memory items were written since a reader last looked.

Every write of a memory item through the apply step (or ``forget``) bumps a counter kept in
one small item per namespace, ``(kind, owner, "memories_meta", category)`` / ``"changes"``,
with the keys of the newest ``KEEP`` writes. A process's prefilter index reads that one item
per commit: the same counter, nothing to do; a few more, re-read those keys; more than it
keeps, list the namespace again. So a commit's prefilter costs the same at 100 and at 10,000
stored memories, and stays right across processes sharing a store. Bumps happen under the
owner's lock, with the write they record.
"""

from __future__ import annotations

from typing import Any

from langgraph.store.base import BaseStore

__all__ = ["KEEP", "bump", "changed_since", "meta_namespace"]

KEEP = 512


def meta_namespace(namespace: tuple[str, ...]) -> tuple[str, ...]:
    """Where a memories namespace's change feed lives (never searched as memories)."""
    return (namespace[0], namespace[1], "memories_meta", *namespace[3:])


def bump(store: BaseStore, namespace: tuple[str, ...], key: str) -> None:
    """Record a write of ``key`` (call under the owner's lock, beside the write)."""
    item = store.get(meta_namespace(namespace), "changes")
    value = dict(item.value) if item is not None else {"seq": 0, "recent": []}
    seq = int(value.get("seq", 0)) + 1
    recent = [*(value.get("recent") or [])[-(KEEP - 1) :], [seq, key]]
    store.put(meta_namespace(namespace), "changes", {"seq": seq, "recent": recent}, index=False)


def changed_since(store: BaseStore, namespace: tuple[str, ...], seq: int | None) -> tuple[int, list[str] | None]:
    """(the counter now, the keys written since ``seq``); None for the keys when the feed does
    not reach back that far (or ``seq`` is None): the reader must list the namespace."""
    item = store.get(meta_namespace(namespace), "changes")
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
