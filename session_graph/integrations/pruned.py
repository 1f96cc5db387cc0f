"""Whether a resize only pruned: the window lost its oldest messages and nothing else moved.

A step that resizes before a later model call of an agent turn (its unsaved messages still in
the agent's state) need not write for a lite prune: the pruned messages are in the store
already, and the window is derived state that the turn's next write brings up to date (an
append save carries a prune: ``stores/session_append``). A crash before that write leaves the
stored window as it was (larger; the next step judges and prunes it again) and loses only the
prune's trace record and its ``last_resize`` note. Anything else a resize may do (a fold: the
memo's cursor, the memo's content, the fold records, the commit ledger; a handler that puts a
message of its own in the window) is written at once.
"""

from __future__ import annotations

from copy import deepcopy
from typing import Any
import weakref

from session_graph.session import Session

__all__ = ["Before", "Carried", "before_resize", "carried", "carry", "only_pruned"]

_NOTE = "last_resize"  # the memo's note of the last resize, which a prune rewrites
_KEPT = ("memo_cursor", "memo_ahead", "archived_through", "usage", "archives", "fold_records")

Before = tuple[list[Any], dict[str, Any], tuple[Any, ...]]


def before_resize(session: Session) -> Before:
    """What :func:`only_pruned` compares against: O(window) references and a copy of the memo."""
    state = session.state  # the memo copied at depth: a resize may edit a value in place (a list it appends to)
    return list(state.current_chat_history), deepcopy({k: v for k, v in state.memo.items() if k != _NOTE}), tuple(getattr(state, name) for name in _KEPT)


def only_pruned(session: Session, before: Before) -> bool:
    """Whether ``session`` changed since ``before`` only as a lite prune does: its window is the
    old window without its first messages (the same objects, in order), and the memo (but its
    ``last_resize`` note), memo cursor, fold records and commit ledger are as they were."""
    window, memo, kept = before
    state = session.state
    now = state.current_chat_history
    dropped = len(window) - len(now)
    if dropped < 0 or any(a is not b for a, b in zip(window[dropped:], now, strict=True)):
        return False
    if tuple(getattr(state, name) for name in _KEPT) != kept:
        return False
    current = state.memo
    return current.keys() - {_NOTE} == memo.keys() and all(current[key] == memo[key] for key in memo)


Carried = weakref.WeakKeyDictionary[Session, tuple[int, int]]  # session -> (its saved revision, the prunes' moves since)


def carry(table: Carried, session: Session, entry: Any, moves: int) -> None:
    """Note that prunes left for the next write moved ``session``'s revision ``moves`` times since
    its save at ``entry.revision`` (a manager's cache entry): the binding's check for a tool's edit
    in place must not count them (``SessionBinding._edited``); the next save moves the base."""
    if entry is None or entry.session is not session or entry.revision < 0:
        return
    base, before = table.get(session, (-1, 0))
    table[session] = (entry.revision, (before if base == entry.revision else 0) + moves)


def carried(table: Carried, session: Session, revision: int) -> int:
    """The revision moves of prunes carried since ``session`` was saved at ``revision``."""
    base, moves = table.get(session, (-1, 0))
    return moves if base == revision >= 0 else 0
