"""A SessionManager's save: new messages appended and the state replaced in one store ``update``.

Under the store's writer lock the save appends only the messages the store does not have and
replaces the small state document, or, if another writer got in since we read, merges what
they stored with our changes and writes that, in the same locked step (never a retry). Two
writers on one key thus keep both windows, both counters and what each memo really folded.
A merge that needs the history's middle still in the store (``NeedsHistory``) pages it in
outside the lock and runs again; a session deleted or cleared meanwhile is merged after a full
read (``session_load.merge_flow``).
"""

from __future__ import annotations

from collections.abc import Callable

from session_graph.errors import StoreConflictError, StoreError
from session_graph.resize.history import is_loaded
from session_graph.resize.trace import ResizeTrace, saved_trace
from session_graph.session import Session
from session_graph.stores.base import Snapshot, StoreChange, StoredSession, check_key, resets, update_options, utc_now
from session_graph.stores.codec import message_record, message_records, session_state, state_document
from session_graph.stores.flows import Blocking, Call, Operation
from session_graph.stores.merge import Merged, adopt, base_document
from session_graph.stores.session_append import append_flow
from session_graph.stores.session_load import Entry, Owner, cleared, merge_flow, merge_with

MAX_MERGES = 50


class NeedsHistory(StoreConflictError):
    """A save must merge, and the session's history still has its middle in the store (a
    conflict, so the drivers hand it back to the save, which pages the middle in and retries)."""


def save_flow(manager: Owner, session: Session, durable: bool = True) -> Operation:
    """Append the new messages and replace the state in one ``update``: under the store's
    lock, as is if nobody wrote since we read, else merged with what they wrote."""
    key = check_key(session.id)
    entry = manager.cache.get(key)
    if entry is None or entry.session is not session:
        if (yield Call("version", (manager.tenant, key))) is not None:
            raise StoreError(
                f"session {key!r} is already stored; get it with manager.get_or_create({key!r}) "
                "and save that object, so nothing stored is overwritten."
            )
        entry = Entry(session, 0, 0, -1, utc_now(), {})
    revision = session.revision  # read once: each read compares the memo and metadata by content
    if entry.version and entry.revision == revision and not session.cleared:
        return  # nothing changed since the last save
    if (yield from append_flow(manager, entry, session, durable, revision)):
        return  # it only gained messages: appended at their cost (session_append)
    for attempt in range(MAX_MERGES):
        history = session.full_chat_history
        count = len(history)
        reset = session.cleared
        new = list(history) if reset else history[entry.persisted :]  # a lazy history's middle stays in the store
        now = utc_now()
        records = message_records(new, session.arrived_at, now)
        revision = session.revision if attempt else revision  # read before the state is taken
        state = session_state(session, entry.created_at, now)
        held = min(entry.persisted, count)  # what the store holds of it (a merge builds on them, never copies them)
        merged: list[Merged] = []
        seen: list[StoredSession] = []
        change = saving(manager, entry, StoreChange(state, records, reset), held, now, merged, seen)
        try:
            version = yield Call("update", (manager.tenant, key, change), {"since": held, **update_options(manager.store, durable)})
        except NeedsHistory:  # a merge reads the whole history: page it in outside the store's lock, then retry
            yield Blocking(history.load)  # type: ignore[union-attr]
            continue
        except StoreConflictError:
            yield from merge_flow(manager, key, entry)  # deleted or cleared meanwhile: merge after a full read
            continue
        session.cleared = False
        if merged:  # the store merged another writer's changes in while it held its lock
            # what the store holds, taken before adopt settles the merged history on the session's
            # own list and puts messages appended meanwhile on top (those are not stored yet)
            stored_count = len(merged[-1].state.full_chat_history)
            base = base_document(merged[-1].state, {**state, "metadata": merged[-1].metadata,
                                                    "resets": resets(seen[-1].state)}, stored_count)
            adopt(session, merged[-1], late=session.full_chat_history[count:])
            session.trace.merge(saved_trace(seen[-1].state or {}, f"session {key!r}"))  # its resizes too
            entry.version, entry.persisted, entry.base = version, stored_count, base
            entry.revision = session.revision if len(session.full_chat_history) == entry.persisted else -1
        else:
            entry.version = version
            entry.base = {**state, "message_count": entry.persisted + len(new), "resets": resets(seen[-1].state) + reset}
            entry.persisted, entry.revision = (entry.persisted if not reset else 0) + len(new), revision
        manager.cache.remember(key, entry)
        return
    raise StoreError(f"session {key!r} was deleted or cleared under {MAX_MERGES} saves in a row; save it again.")


def saving(manager: Owner, entry: Entry, mine: StoreChange, held: int, now: str, merged: list[Merged],
        seen: list[StoredSession]) -> Callable[[StoredSession], StoreChange]:
    """The update function of a save: ``mine`` if nobody wrote since we read, else the merge
    with what they stored (computed under the store's lock and kept in ``merged``; what the
    store held is kept in ``seen``)."""
    session, key = entry.session, entry.session.id

    def change(stored: StoredSession) -> StoreChange:
        seen.append(stored)
        if mine.reset or stored.version == entry.version:
            return mine
        if not is_loaded(session.full_chat_history):
            raise NeedsHistory(f"session {key!r}: a merge needs the whole history")  # never read the store inside its lock
        if stored.state is None or cleared(entry, stored.state, stored.message_count, held):
            raise StoreConflictError(f"session {key!r} was deleted or cleared by another writer")
        result = merge_with(manager, entry, Snapshot(key, stored.state, stored.records, stored.version), held)
        merged.append(result)
        arrived, stamps = result.arrived, session.arrived_at  # theirs first; no merged copy of every stamp
        trace = ResizeTrace(session.trace)
        trace.merge(saved_trace(stored.state, f"session {key!r}"))  # the other writer's resizes too
        order = result.stored
        document = state_document(result.state, result.metadata, entry.created_at, now, lambda m: m.id in order, trace,
                                  lambda m: order.get(m.id))
        return StoreChange(document, [message_record(m, arrived[i] if (i := m.id or "") in arrived else stamps.get(i, now))
                                      for m in result.unsaved])

    return change
