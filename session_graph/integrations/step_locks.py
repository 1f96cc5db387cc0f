"""The agent step's locks: one per session key (and event loop, or one for all threads), owned by
the manager or the fixed session every binding over it shares, made anew in a forked child."""

from __future__ import annotations

import threading
from typing import Any
import weakref

from session_graph._base.forks import renew_after_fork

__all__ = ["lock_of", "locks_of"]

Locks = weakref.WeakValueDictionary[tuple[str, Any], Any]

_LOCKS: weakref.WeakKeyDictionary[Any, Locks] = weakref.WeakKeyDictionary()
_LOCKS_GUARD = threading.Lock()


class _ForkedLocks:
    """A forked child's step locks anew (``_base/forks.py``): a parent thread mid-step is not there."""

    def _after_fork(self) -> None:
        global _LOCKS_GUARD
        _LOCKS_GUARD = threading.Lock()
        for locks in list(_LOCKS.values()):
            locks.clear()  # the next step on a key makes its lock anew


renew_after_fork(_FORKED := _ForkedLocks())


def locks_of(owner: Any) -> Locks:
    """The step locks of every binding over ``owner`` (a manager, or a fixed session), by key and loop."""
    with _LOCKS_GUARD:
        locks = _LOCKS.get(owner)
        if locks is None:
            locks = _LOCKS[owner] = weakref.WeakValueDictionary()
        return locks


def lock_of(locks: Locks, key: str, owner: Any, make: Any) -> Any:
    """The lock of ``key`` and ``owner`` (an event loop, or ``"thread"``) in ``locks``, made by ``make`` the first time."""
    with _LOCKS_GUARD:
        lock = locks.get((key, owner))
        if lock is None:
            lock = locks[(key, owner)] = make()
        return lock
