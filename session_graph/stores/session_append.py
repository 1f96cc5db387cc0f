"""A save that only appends: the messages a session gained since its last save, at their cost.

Most saves of an agent turn follow appends only (the user's input, a tool call and its result,
the reply). When a session changed in no other way since the save the manager remembers (its
revision moved by exactly the messages it gained: no resize, load, clear, touch or setting in
between; the gained messages end its window; its memo and metadata are what was stored), and
the store can append on top of the state it wrote last (``JsonlStore.append_messages``), the
save writes those messages' records and the state line they make (the window grows by their
ids; the count, the turns and the version move) without building or encoding the state
document. Anything else, or a store without that method, is a full save (``session_save``),
which merges what another writer stored.
"""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

from session_graph.session import Session
from session_graph.stores.base import utc_now
from session_graph.stores.codec import message_record
from session_graph.stores.flows import Blocking, Call
from session_graph.stores.jsonl_state import Appending
from session_graph.stores.session_load import Entry, Owner, remember

__all__ = ["append_flow"]


def append_flow(manager: Owner, entry: Entry, session: Session, durable: bool) -> Generator[Call | Blocking, Any, bool]:
    """Save ``session`` (``entry``'s, stored before) by appending what it gained; False when it
    cannot (nothing written: the caller saves in full)."""
    append = getattr(manager.store, "append_messages", None)
    history = session.full_chat_history
    gained = len(history) - entry.persisted
    if append is None or not entry.version or session.cleared or gained <= 0 or session.revision - entry.revision != gained:
        return False
    window = session.current_chat_history
    new = history[entry.persisted :]  # a lazy history's middle stays in the store
    if len(window) < gained or any(a is not b for a, b in zip(window[len(window) - gained :], new, strict=True)):
        return False
    now = utc_now()
    state = session.state
    before = [m.id for m in window[: len(window) - gained]]
    expect = Appending(entry.version, entry.persisted, before, state.memo, session.metadata, {"updated_at": now, "turns": state.turns})
    records = [message_record(message, session.arrived_at.get(message.id or "", now)) for message in new]
    key = session.id
    version = yield Blocking(lambda: append(manager.tenant, key, records, expect, sync=durable))
    if version is None:
        return False
    entry.version, entry.persisted, entry.revision = version, entry.persisted + gained, session.revision
    entry.base = {**entry.base, **expect.fields, "window": [*before, *(m.id for m in new)], "message_count": entry.persisted}
    remember(manager, key, entry)
    return True
