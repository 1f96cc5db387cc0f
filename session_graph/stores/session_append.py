"""A save that only appends: what a session gained since its last save, at its cost.

Most saves of an agent turn follow appends (the user's input, a tool call and its result, the
reply) and, one turn in a few, a lite prune (the window lost its oldest messages). When that is
all a session did since the save the manager remembers (the messages it gained end its window;
the window's other messages are its stored window without its first ones, none held inline;
its metadata, settings, memo cursor, fold records and commit ledger are what was stored; its
memo too unless it pruned),
and the store can append on top of the state it wrote last (``JsonlStore.append_messages``),
the save writes those messages' records and the state line they make (the window loses its
first ids and grows by theirs; the count, the turns, the window start, the last resize turn,
the memo's note of the prune and the version move; the trace's new records
follow, as ``"trace+"``: ``stores.jsonl_trace``) without building or encoding
the state document. Anything else (a fold, a clear, an edit, a touch, a setting, another writer)
or a store without that method is a full save (``session_save``), which merges what another
writer stored.
"""

from __future__ import annotations

from collections.abc import Generator
from operator import attrgetter, is_
from typing import Any

from session_graph.interop.export import commit_fields
from session_graph.resize.history import LazyHistory
from session_graph.resize.trace import SAVED_TRACE
from session_graph.session import Session
from session_graph.stores.base import utc_now
from session_graph.stores.codec import message_records, window_start
from session_graph.stores.flows import Blocking, Call
from session_graph.stores.jsonl_state import Appending
from session_graph.stores.jsonl_trace import LazyTrace
from session_graph.stores.session_load import Entry, Owner

__all__ = ["append_flow", "appended"]

_COMMIT = ("archived_through", "usage", "archives")
_ID = attrgetter("id")


def append_flow(manager: Owner, entry: Entry, session: Session, durable: bool, revision: int
                ) -> Generator[Call | Blocking, Any, bool]:
    """Save ``session`` (``entry``'s, stored before, at ``revision``: read once by the caller,
    each read encodes the memo) by appending what it gained; False when it cannot (nothing
    written: the caller saves in full)."""
    plan = _plan(manager, entry, session, revision)
    if plan is None:
        return False
    append, records, expect, done = plan
    key, tenant = session.id, manager.tenant
    return done((yield Blocking(lambda: append(tenant, key, records, expect, sync=durable))))


def appended(manager: Owner, session: Session, durable: bool) -> bool:
    """The common save, run at once from sync code (no operation to drive): ``session`` as its
    manager last saved it (True, nothing written) or grown by appends and lite prunes only,
    appended at their cost (True); False when it needs ``save_flow`` (not saved yet, another
    writer, anything else), nothing written."""
    entry = manager.cache.get(session.id)
    if entry is None or entry.session is not session or not entry.version or session.cleared:
        return False
    if getattr(manager.store, "append_messages", None) is None:
        return False  # save_flow reads the revision (once) and saves in full
    revision = session.revision  # read once: each read compares the memo and metadata by content
    if entry.revision == revision:
        return True  # nothing changed since the last save
    plan = _plan(manager, entry, session, revision)
    if plan is None:
        return False
    append, records, expect, done = plan
    return done(append(manager.tenant, session.id, records, expect, sync=durable))


def _plan(manager: Owner, entry: Entry, session: Session, revision: int) -> tuple[Any, list[dict[str, Any]], Appending, Any] | None:
    """What an append save writes: the store's method, the records, the state it expects, and
    what takes the store's answer (the new version, or None: nothing written) and returns
    whether it saved. None when the session changed otherwise (a full save)."""
    append = getattr(manager.store, "append_messages", None)
    history = session.full_chat_history
    gained = len(history) - entry.persisted
    if append is None or not entry.version or session.cleared or gained < 0:
        return None
    window = session.current_chat_history
    new = history[entry.persisted :]  # a lazy history's middle stays in the store
    kept = len(window) - gained
    if kept < 0 or not all(map(is_, window[kept:], new)):  # the same messages, compared in C (both len gained)
        return None
    base, state = entry.base, session.state
    stored = base.get("window")
    if not isinstance(stored, list) or len(stored) < kept:
        return None
    now = utc_now()
    fields: dict[str, Any] = {"updated_at": now, "turns": state.turns}
    dropped = len(stored) - kept
    ids = list(map(_ID, window[:kept]))  # one pass, compared in C: the window is checked on every save
    if ids != stored[dropped:]:
        return None  # the window is not the stored one without its first ids and with the new messages
    pruned = revision - entry.revision != gained or dropped  # more than appends: a prune, or nothing it can append
    if pruned and (not (dropped or gained) or not _only_pruned(session, base, ids, fields, entry.persisted if gained else len(history))):
        return None
    expect = Appending(entry.version, entry.persisted, stored, state.memo, session.metadata, fields, dropped)
    records = message_records(new, session.arrived_at, now)

    def done(version: int | None) -> bool:
        if version is None:
            return False
        entry.version, entry.persisted, entry.revision = version, entry.persisted + gained, revision
        entry.base = {**base, **fields, "window": [*stored[dropped:], *map(_ID, new)], "message_count": entry.persisted}
        manager.cache.remember(session.id, entry)
        return True

    return append, records, expect, done


def _only_pruned(session: Session, base: dict[str, Any], kept: list[Any], fields: dict[str, Any], after: int) -> bool:
    """Whether the session changed since ``base`` (the document it last saved) only as a lite
    prune does: its window's messages before the new ones (``kept``: their ids, the stored window
    without its first ones) are all in the history (nothing inline), and the memo's cursor, the
    settings, the fold records and the commit ledger are as stored (the metadata the store
    compares itself; the memo goes with the state line). Adds what the prune changed to ``fields`` (``after``: the first
    position of the new messages, or the history's length)."""
    state, ledger = session.state, session._ledger
    if base.get("inline"):
        return False
    low = _contiguous(session, ledger, len(kept))
    if low is None:
        positions = ledger.held_positions(kept)  # one pass; a lazy history's middle is read only if one is not held
        if None in positions:
            positions = list(map(ledger.position, kept))  # as ``index_of`` places a message (an id None: not there either)
            if None in positions:
                return False
        low = min(positions, default=after)  # type: ignore[type-var]
    commits = commit_fields(state)
    if (base.get("memo_cursor") != state.memo_cursor or base.get("memo_ahead") != sorted(state.memo_ahead)
            or base.get("fold_records") != (state.fold_records or None) or base.get("settings") != state.settings.saved()
            or any(base.get(name) != commits.get(name) for name in _COMMIT)):
        return False
    fields["memo"] = state.memo  # a prune notes itself in the memo ("last_resize"): carried in the state line, checked exact by ``grown``'s round trip
    fields["last_resize_turn"] = state.last_resize_turn
    fields["window_start"] = window_start(state, low)  # type: ignore[arg-type]
    if session.trace:  # the meta file's (no state line carries it), dumped when that is written
        trace = session.trace
        fields["trace"] = LazyTrace(lambda: trace.dump(SAVED_TRACE), trace, SAVED_TRACE)
    return True


def _contiguous(session: Session, ledger: Any, count: int) -> int | None:
    """Where the window's first ``count`` messages start in the history when they are the
    history's messages there, in order (the usual window: two look-ups and an identity check in
    C, not a look-up per message), each with an id of its own (appended since the ledger's index
    was built: a repeated id was refused), so each is where ``position`` places it; None
    otherwise, or when that would read a lazy history's middle (the caller looks each up)."""
    if not count:
        return None
    window, history = session.current_chat_history, session.full_chat_history
    first = ledger.held_position(window[0].id)
    if first is None or not ledger.appended_from(first) or first + count > len(history) or (
            isinstance(history, LazyHistory) and not history.loaded and first < history.start):
        return None
    kept = window[:count]
    if not all(map(_ID, kept)) or not all(map(is_, kept, history[first : first + count])):
        return None
    return first if ledger.held_position(kept[-1].id) == first + count - 1 else None
