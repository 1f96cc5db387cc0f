"""Locks a forked child gets anew.

``os.fork`` copies a process with only the forking thread: a lock another thread held at that
moment stays locked in the child, with nobody there to release it, so the child's first use
waits forever. An object holding such locks calls ``renew_after_fork(self)`` once and defines
``_after_fork()``, which the child runs right after the fork (``os.register_at_fork``), before
any of its code: it makes its locks anew and drops what it must not share with the parent.
Objects are held weakly.
"""

from __future__ import annotations

import os
from typing import Any
import weakref

__all__ = ["renew_after_fork"]

_OWNERS: weakref.WeakSet[Any] = weakref.WeakSet()


def renew_after_fork(owner: Any) -> None:
    """Run ``owner._after_fork()`` in every child forked from now on, while ``owner`` lives."""
    _OWNERS.add(owner)


def _forked() -> None:
    for owner in list(_OWNERS):
        owner._after_fork()


if hasattr(os, "register_at_fork"):  # POSIX
    os.register_at_fork(after_in_child=_forked)
