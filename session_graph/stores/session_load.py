"""A SessionManager's sessions by key: its LRU cache, and the flows that load and merge them.

``get_flow`` returns the cached Session while the store's version is the one it last saw, and
otherwise loads it (``load_flow``: a lazy load when the store reads windows, the middle of the
history staying in the store until needed) or, when the cached session has changes of its own,
merges what another writer stored into it in place (``merge_flow``, ``stores.merge``). An
``Entry`` is what the manager knows of a cached session's stored copy. The cache is LRU; an
entry with unsaved changes is never evicted (``SessionCache``, the manager's ``cache``: the flows
use it through its methods only). Each flow is a generator of store calls and blocking work, driven
sync or async by ``stores.flows`` (one implementation); each takes the manager (``Owner``: its
store, tenant, factory and cache, read at each use).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
import logging
import threading
import time
from typing import Any, Protocol

from langchain_core.messages import BaseMessage

from session_graph._base.edits import detached
from session_graph._base.forks import renew_after_fork
from session_graph._base.gc import paused_gc
from session_graph._base.memory import TRIM_AFTER, trim_heap
from session_graph._base.progress import Progress
from session_graph.errors import ConfigurationError, MessageError, StoreError
from session_graph.resize.arrivals import LoadedStamps
from session_graph.resize.history import is_loaded, prefix
from session_graph.resize.trace import saved_trace
from session_graph.retrieval.messages import bind_store
from session_graph.session import Session
from session_graph.stores.base import SessionStore, Snapshot, check_key, resets, utc_now
from session_graph.stores.codec import Middle, messages_of, record_message, snapshot_state
from session_graph.stores.flows import Blocking, Call, Operation
from session_graph.stores.merge import Merged, adopt, base_document, merge_snapshot

log = logging.getLogger(__name__)


@dataclass
class Entry:
    """A cached session and what the manager knows of its stored copy."""

    session: Session
    version: int  # the store's version when we last read or wrote it (0: not stored yet)
    persisted: int  # messages of session.full_chat_history the store holds
    revision: int  # session.revision at that time
    created_at: str
    base: dict[str, Any]  # the state document we last read or wrote (what a merge starts from)


def _saved(entry: Entry) -> bool:
    """Whether ``entry``'s session has no change since its save. One whose history was edited in
    place (reading its revision refuses it) counts as unsaved: kept, and refused only to its own
    save or view, never to another session's step that evicts."""
    try:
        return entry.session.revision == entry.revision
    except MessageError:
        return False


class SessionCache:
    """A manager's live sessions by key, least recently used first; an entry with unsaved changes,
    or held by a step that is using it (``hold``), is never evicted (``size`` is a bound on the
    others). Safe to share between threads: steps of different keys run at the same time.

    Args:
        size: how many entries to keep when the oldest have no unsaved changes.
    """

    def __init__(self, size: int) -> None:
        self.size = size
        self._entries: OrderedDict[str, Entry] = OrderedDict()
        self._held: dict[str, int] = {}
        self._lock = threading.RLock()
        renew_after_fork(self)

    def _after_fork(self) -> None:
        """A forked child: a new lock (a parent thread holding it is not there), no step holding a key."""
        self._lock = threading.RLock()
        self._held = {}

    def get(self, key: str) -> Entry | None:
        """The entry for ``key`` (its place in the order unchanged), or None."""
        return self._entries.get(key)

    def use(self, key: str) -> None:
        """Mark ``key`` the most recently used (nothing if another thread evicted it meanwhile)."""
        with self._lock:
            if key in self._entries:
                self._entries.move_to_end(key)

    def hold(self, key: str) -> None:
        """Keep ``key``'s entry from eviction while a step uses its session (another key's step,
        in another thread, would otherwise evict it under the step: its save then refused), until
        the step's ``release`` (paired by the caller: no context manager's generator per step)."""
        with self._lock:
            self._held[key] = self._held.get(key, 0) + 1

    def release(self, key: str) -> None:
        """``hold``'s end: ``key`` may be evicted again once no step holds it."""
        with self._lock:
            if self._held[key] == 1:
                del self._held[key]
            else:
                self._held[key] -= 1

    def remember(self, key: str, entry: Entry) -> None:
        """Keep ``entry`` as the newest; evict the oldest entries without unsaved changes (and not
        held) past ``size``. Its base never shares the session's memo or metadata (whoever cached
        it: a save, a load, an import): an edit in place after this is a change the next merge keeps."""
        base, session = entry.base, entry.session
        if base.get("memo") is session.state.memo:
            base["memo"] = detached(session.state.memo)
        if base.get("metadata") is session.metadata:
            base["metadata"] = detached(session.metadata)
        with self._lock:
            self._entries[key] = entry
            self._entries.move_to_end(key)
            while len(self._entries) > self.size:
                victim = next((k for k, e in self._entries.items() if _saved(e) and k not in self._held), None)
                if victim is None or victim == key:
                    break  # every other entry has unsaved changes or is in use: keep them rather than lose work
                del self._entries[victim]

    def pop(self, key: str) -> Entry | None:
        """Forget ``key``; its entry, or None."""
        with self._lock:
            return self._entries.pop(key, None)

    def clear(self) -> None:
        """Forget every entry (the sessions live on; the next ``get`` reads the store)."""
        with self._lock:
            self._entries.clear()

    def __iter__(self) -> Iterator[Entry]:
        with self._lock:
            return iter(list(self._entries.values()))

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, key: object) -> bool:
        return key in self._entries


class Owner(Protocol):
    """What the flows use of their ``SessionManager`` (read at each use: a factory set later counts)."""

    store: SessionStore
    tenant: str
    merges: int
    session_factory: Callable[[str], Session]
    cache: SessionCache


def get_flow(manager: Owner, key: str, progress: Progress | None = None) -> Operation:
    """The session for ``key``: the cached one while the store has not changed, else loaded (or merged); None if none."""
    key = check_key(key)
    entry = manager.cache.get(key)
    version = yield Call("version", (manager.tenant, key))
    if entry is not None and version == (entry.version or None):
        manager.cache.use(key)
        return entry.session
    if version is None:
        return entry.session if entry is not None else None
    return (yield from load_flow(manager, key, entry, progress))


def get_or_create_flow(manager: Owner, key: str, progress: Progress | None = None) -> Operation:
    """The session for ``key`` as ``get_flow`` gives it, or a new one from the factory (cached, not stored)."""
    session = yield from get_flow(manager, key, progress)
    if session is not None:
        return session
    made = manager.cache.get(key)  # another task made it while this one waited on the store: share it
    if made is not None:
        return made.session
    session = manager.session_factory(key)
    if session.id != key:
        raise ConfigurationError(f"session_factory({key!r}) made a session with id {session.id!r}; use Session(key).")
    manager.cache.remember(key, Entry(session, 0, 0, -1, utc_now(), {}))
    return session


def load_flow(manager: Owner, key: str, entry: Entry | None, progress: Progress | None = None) -> Operation:
    """Load a stored session; a cached one with changes of its own is merged with what is stored."""
    if entry is not None and entry.session.revision != entry.revision:
        yield from merge_flow(manager, key, entry)
        return entry.session
    started = time.perf_counter()
    held = prefix(entry.session.full_chat_history, entry.persisted) if entry is not None else []
    window = not held and getattr(manager.store, "reads_windows", False)  # a lazy load: the middle stays in the store
    snapshot = yield Call("read", (manager.tenant, key), {"since": len(held)} if held else {"window": True} if window else {})
    if snapshot is not None and held and (cleared(entry, snapshot.state, None, len(held))
                                          or overlaps(entry.session, snapshot.records, len(held))):
        held = []
        snapshot = yield Call("read", (manager.tenant, key))
    if snapshot is None:
        return None
    middle = lazy_middle(manager, key, snapshot) if window else None
    arrived = LoadedStamps(len(held))  # filled in the same pass that makes the messages: numbers by position
    state, metadata = yield Blocking(lambda: snapshot_state(snapshot, f"session {key!r}", held, progress, middle, arrived))
    raced = manager.cache.get(key)
    if entry is None and raced is not None:  # another task loaded it meanwhile: one object per key, never two
        return (yield from get_flow(manager, key, progress))
    log.info("session %r %s from the store: %d messages in %.2f s", key, "reloaded" if entry is not None else "loaded",
             len(state.full_chat_history), time.perf_counter() - started)
    session = entry.session if entry is not None else manager.session_factory(key)
    session.restore(state)
    if middle is not None and getattr(manager.store, "search_index", None) is not None:
        bind_store(session, manager.store.search_index, manager.tenant)  # Session.search asks the store for the middle
    session.trace.replace(saved_trace(snapshot.state, f"session {key!r}"))
    session.metadata = metadata
    session.arrived_at.adopt(arrived, keep=bool(held))  # as compact as appended stamps (resize/arrivals.py)
    manager.cache.remember(key, Entry(session, snapshot.version, len(state.full_chat_history), session.revision,
                                      snapshot.state.get("created_at", utc_now()), base_document(state, snapshot.state)))
    if len(snapshot.records) >= TRIM_AFTER:  # last: the restore's tables and the read state document are freed by now
        snapshot = None  # type: ignore[assignment]  # its state document (a window of ids) goes before the trim
        trim_heap()  # what the load freed outside Python's own allocator goes back to the OS
    return session


def merge_flow(manager: Owner, key: str, entry: Entry) -> Operation:
    """Merge what another writer stored with the cached session's own changes, in place.

    Reads only the records after the ones this session holds (O(what the other wrote)).
    """
    session = entry.session
    held = min(entry.persisted, len(session.full_chat_history))
    snapshot = yield Call("read", (manager.tenant, key), {"since": held})
    if snapshot is not None and held and (cleared(entry, snapshot.state, None, held) or overlaps(session, snapshot.records, held)):
        held = 0
        snapshot = yield Call("read", (manager.tenant, key))
    if snapshot is None:  # deleted meanwhile: what we hold is all there is
        entry.version, entry.persisted, entry.base = 0, 0, {}
        return
    log.info("session %r: merging %d message(s) another writer stored with this one's changes", key, len(snapshot.records))
    if held and not is_loaded(session.full_chat_history):
        yield Blocking(session.full_chat_history.load)  # type: ignore[attr-defined]  # the merge builds on the held messages
    count = len(session.full_chat_history)
    result = yield Blocking(lambda: merge_with(manager, entry, snapshot, held))
    adopt(session, result, late=session.full_chat_history[count:])  # appended meanwhile (an async run): kept on top
    session.trace.merge(saved_trace(snapshot.state, f"session {key!r}"))
    entry.version, entry.persisted = snapshot.version, result.theirs_count
    entry.base = base_document(result.theirs, snapshot.state, result.theirs_count)
    entry.revision = -1  # our own messages and changes are not stored yet


def lazy_middle(manager: Owner, key: str, snapshot: Snapshot) -> Middle:
    """How a lazily loaded session reads the messages between its first one and its window:
    one store read on first need, refused if the session was cleared or deleted since."""
    store, tenant, where, stamp = manager.store, manager.tenant, f"session {key!r}", resets(snapshot.state)

    def load(stop: int) -> list[BaseMessage]:
        with paused_gc():  # one pause over reading and decoding: the collector runs once after, not twice
            stored = store.read(tenant, key, since=1)
            if stored is None or resets(stored.state) != stamp:
                raise StoreError(f"{where} was cleared or deleted in the store since it was loaded; get it again.")
            records = stored.records
            del stored  # the records past the middle go now, before the middle's messages are made
            count = min(stop - 1, len(records))
            if count and (records[0].get("seq") != 1 or records[count - 1].get("seq") != count):  # not numbered 1, 2, ...
                return [record_message(r, where) for r in records if int(r.get("seq", stop)) < stop]
            middle = records[:count]
            del records
            messages = messages_of(middle, where)  # one pass, each row let go once decoded
        if len(messages) >= TRIM_AFTER:
            trim_heap()  # what the decode freed outside Python's own allocator goes back to the OS
        return messages

    ids = getattr(store, "ids", None)
    return load, (lambda stop: ids(tenant, key, 1, stop)) if ids is not None else None


def cleared(entry: Entry | None, state: dict[str, Any], count: int | None, held: int) -> bool:
    """Whether the first ``held`` stored messages are no longer the ones the entry read
    (another writer cleared the session since: fewer messages, or another ``resets``)."""
    count = int(state.get("message_count", 0)) if count is None else count
    return count < held or (entry is not None and resets(state) != resets(entry.base))


def overlaps(session: Session, records: Sequence[dict[str, Any]], held: int) -> bool:
    """Whether the records read from ``seq`` ``held`` on start with a message the session already
    holds before ``held``: a log whose numbering has a gap (a line removed by hand, a damaged one
    quarantined) numbers its records past their positions, so such a read repeats the last ones
    held (the caller then reads the whole log, numbered by position)."""
    first = records[0].get("id") if len(records) else None
    position = session._ledger.held_position(first) if type(first) is str and first else None
    return position is not None and position < held


def merge_with(manager: Owner, entry: Entry, snapshot: Snapshot, held: int) -> Merged:
    """What merging ``snapshot`` (records from ``held`` on) with the entry's session gives (pure)."""
    manager.merges += 1
    result = merge_snapshot(entry.base, entry.session, snapshot, held, entry.persisted)
    if result.dropped_fold:
        log.warning("session %r: another writer folded into the memo too; its memo is kept and this writer's "
                    "messages are folded again by the next resize", entry.session.id)
    return result


def stored_snapshot(store: SessionStore, tenant: str, key: str) -> Snapshot:
    """What ``store`` holds of ``tenant``'s session ``key``, read whole.

    Raises:
        KeyError: the store has no such session.
    """
    snapshot = store.read(tenant, check_key(key))
    if snapshot is None:
        raise KeyError(f"no stored session {key!r} for tenant {tenant!r}")
    return snapshot
