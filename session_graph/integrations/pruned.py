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

from typing import Any

from session_graph._base.edits import detached
from session_graph.session import Session

__all__ = ["Before", "before_resize", "edited_since_save", "only_pruned"]

_NOTE = "last_resize"  # the memo's note of the last resize, which a prune rewrites
_KEPT = ("memo_cursor", "memo_ahead", "archived_through", "usage", "archives", "fold_records")

Before = tuple[list[Any], dict[str, Any], tuple[Any, ...]]


def before_resize(session: Session) -> Before:
    """What :func:`only_pruned` compares against: O(window) references and a detached copy of the memo (``_base/edits``: a JSON round trip, ~3x cheaper than ``deepcopy``)."""
    state = session.state  # the memo copied at depth: a resize may edit a value in place (a list it appends to)
    return list(state.current_chat_history), detached({k: v for k, v in state.memo.items() if k != _NOTE}), tuple(getattr(state, name) for name in _KEPT)


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


def edited_since_save(manager: Any, session: Session) -> bool:
    """Whether the memo, metadata or settings of ``session`` differ from what its last save wrote
    (a tool's edit in place mid-turn, which nothing but the store holds: the agent's state holds
    the messages): compared by value with the save's document (``Entry.base``, a detached copy),
    the memo without its ``last_resize`` note, which a prune the next write carries rewrites. A
    session never saved counts as edited."""
    entry = manager.cache.get(session.id)
    if entry is None or entry.session is not session:
        return False
    base, state = entry.base, session.state
    if not entry.version:
        return True
    saved, memo = base.get("memo") or {}, state.memo
    if memo != saved and {k: v for k, v in memo.items() if k != _NOTE} != {k: v for k, v in saved.items() if k != _NOTE}:
        return True
    return base.get("metadata") != session.metadata or base.get("settings") != state.settings.saved()
