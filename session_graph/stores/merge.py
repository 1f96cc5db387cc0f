"""Merge a session's unsaved changes with what another writer stored since it read the session.

Three states meet: the *base* (the state document this writer last read or wrote), *mine*
(the session in memory) and *theirs* (what the store holds now). The merge is per field,
by message id, never by position:

- history: theirs, then my messages the store does not hold (each writer's order is kept);
- window: theirs, less what I dropped since the base, plus what I added since the base (my
  new messages, a handler's inline message), each after the message it followed in mine;
- turns: theirs plus the replies I counted since the base; ``last_resize_turn`` likewise;
- memo and what it covers: the memo that changed since the base wins with what it folded; if
  both writers folded, theirs is kept and the messages only I folded stay unfolded, to be
  folded again by the next resize (the stored memo never claims a message it did not fold);
  if both changed it and mine folded nothing theirs did not, my edits (a key set, changed or
  removed in place, nested dicts likewise) go on theirs key by key (a key both changed: theirs);
- fold records (a back-off, a refused compression): mine if only I changed them since the
  base, else theirs;
- settings: mine if I changed them since the base, else theirs; metadata: theirs updated
  with the keys I set, changed or removed, nested dicts key by key (a key both changed: mine).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from langchain_core.messages import AIMessage, BaseMessage, ToolMessage

from session_graph._base.edits import detached
from session_graph.resize.history import Spliced, is_loaded
from session_graph.resize.state import SessionState
from session_graph.stores.base import Snapshot
from session_graph.stores.codec import snapshot_state

if TYPE_CHECKING:
    from session_graph.session import Session

__all__ = ["Merged", "Order", "adopt", "base_document", "merge_archives", "merge_snapshot", "merge_states", "unfolded_cursor"]

_MISSING = object()


def _folded(ids: list[str], cursor: int, ahead: Iterable[str]) -> set[str]:
    return {*ids[:cursor], *ahead}


def unfolded_cursor(ids: list[str], folded: set[str]) -> tuple[int, frozenset[str]]:
    """(cursor, ahead) for a set of folded ids over a history in this order."""
    cursor = 0
    while cursor < len(ids) and ids[cursor] in folded:
        cursor += 1
    later = set(ids[cursor:])
    return cursor, frozenset(i for i in folded if i in later)


def _window(base: list[str], mine: list[str], theirs: list[str], order: Order | dict[str, int]) -> list[str]:
    """Theirs, less what mine dropped since the base, plus what mine added.

    History messages follow the merged history's order; a message that is not in the history
    (a handler's inline summary) stays after the message it followed.
    """
    base_set = set(base)
    dropped = base_set - set(mine)
    kept = [i for i in theirs if i not in dropped]
    kept_set = set(kept)
    kept += [i for i in mine if i not in base_set and i not in kept_set]
    kept_set.update(kept)
    merged = sorted((i for i in kept if i in order), key=order.__getitem__)
    for source in (theirs, mine):
        for position, message_id in enumerate(source):
            if message_id in order or message_id not in kept_set or message_id in merged:
                continue
            before = next((source[k] for k in range(position - 1, -1, -1) if source[k] in merged), None)
            merged.insert(merged.index(before) + 1 if before is not None else 0, message_id)
    return merged


def _paired(window: list[BaseMessage]) -> list[BaseMessage]:
    """The window with each tool result right after its call (and that call's earlier results).
    Ordered by the merged history (theirs, then mine), a message another writer stored (or a
    line appended by hand) between my saved call and my unsaved result would split the pair,
    and a model refuses a call not followed by its results; the codec keeps this order."""
    calls = {c.get("id") for m in window if isinstance(m, AIMessage) for c in m.tool_calls}
    results: dict[str | None, list[tuple[int, BaseMessage]]] = {}  # by call id, in window order
    for index, message in enumerate(window):
        if isinstance(message, ToolMessage) and message.tool_call_id in calls:
            results.setdefault(message.tool_call_id, []).append((index, message))
    if not results:
        return window
    out: list[BaseMessage] = []
    for message in window:
        if isinstance(message, ToolMessage) and message.tool_call_id in calls:
            continue  # placed with its call
        out.append(message)
        if isinstance(message, AIMessage) and message.tool_calls:  # each result once, with the first call of its id
            mine = [r for c in message.tool_calls for r in results.pop(c.get("id"), ())]
            out.extend(m for _, m in sorted(mine, key=lambda r: r[0]))
    return out


def base_document(state: SessionState, document: dict[str, Any], count: int | None = None) -> dict[str, Any]:
    """What a later merge starts from: the stored document as the decoded ``state`` reads it
    (records written after the document, a crash's or another writer's, counted in; ``count``:
    its messages, when its history list went on to hold more)."""
    return {
        **document,
        "metadata": detached(document.get("metadata") or {}),  # the session's own (a shallow copy) shares its values
        "window": [m.id for m in state.current_chat_history],
        "memo": detached(state.memo),  # the session's own: an edit in place after this is a change
        "turns": state.turns,
        "last_resize_turn": state.last_resize_turn,
        "memo_cursor": state.memo_cursor,
        "memo_ahead": sorted(state.memo_ahead),
        "fold_records": dict(state.fold_records),
        "settings": state.settings.to_dict(),
        "message_count": len(state.full_chat_history) if count is None else count,
        "usage": [dict(record) for record in state.usage],
    }


def edits_on(base: dict[str, Any], mine: dict[str, Any], theirs: dict[str, Any], *, mine_wins: bool = False
             ) -> dict[str, Any]:
    """``theirs`` with my changes since ``base`` key by key (a key I set, changed or removed that
    they left as it was; nested dicts likewise); a key both changed keeps theirs (mine when
    ``mine_wins``: the metadata's rule)."""
    out = dict(theirs)
    for key in [*mine, *(k for k in base if k not in mine)]:
        was, now = base.get(key, _MISSING), mine.get(key, _MISSING)
        if now == was:
            continue
        other = theirs.get(key, _MISSING)
        if other == was:
            if now is _MISSING:
                out.pop(key, None)
            else:
                out[key] = now
        elif isinstance(was, dict) and isinstance(now, dict) and isinstance(other, dict):
            out[key] = edits_on(was, now, other, mine_wins=mine_wins)
        elif mine_wins:
            if now is _MISSING:
                out.pop(key, None)
            else:
                out[key] = now
    return out


def merge_archives(base: dict[str, Any], mine: dict[str, Any], theirs: dict[str, Any]) -> dict[str, Any]:
    """The commit ledger: theirs, with what my commit did since the base (journals it moved on,
    archives it finished); the next index is the larger. Commits of one session run one at a
    time (``SessionManager.commit`` holds a lock), so two writers never claim the same archive."""
    out = dict(theirs)
    out["next"] = max(int(mine.get("next", 0) or 0), int(theirs.get("next", 0) or 0))
    pending, done = dict(theirs.get("pending") or {}), dict(theirs.get("done") or {})
    base_pending, base_done = base.get("pending") or {}, base.get("done") or {}
    for name, journal in (mine.get("pending") or {}).items():
        if name not in done and journal != base_pending.get(name):
            pending[name] = journal
    for name, record in (mine.get("done") or {}).items():
        if name not in base_done:
            done[name] = record
            pending.pop(name, None)
            out["last_overview"] = mine.get("last_overview", out.get("last_overview"))
    out["pending"], out["done"] = pending, done
    return out


class Order:
    """Positions in a merged history by message id, without indexing all of it: the first
    ``shared`` messages (the ones both writers hold, in the same places) through ``prefix``, the
    caller's own index of its history; the rest through a dict of the tail (what changed)."""

    __slots__ = ("full", "prefix", "shared", "tail")

    def __init__(self, full: Sequence[BaseMessage], shared: int, prefix: Callable[[str], int | None] | None) -> None:
        self.full, self.shared, self.prefix = full, shared if prefix is not None else 0, prefix
        self.tail = {m.id or "": i for i, m in enumerate(full[self.shared :], self.shared)}

    def get(self, message_id: str | None) -> int | None:
        """The position of ``message_id`` in the merged history, or None if it is not there."""
        position = self.tail.get(message_id or "")
        if position is None and self.prefix is not None and message_id:
            found = self.prefix(message_id)
            position = found if found is not None and found < self.shared else None
        return position

    def __contains__(self, message_id: object) -> bool:
        return self.get(message_id) is not None  # type: ignore[arg-type]

    def __getitem__(self, message_id: str) -> int:
        position = self.get(message_id)
        if position is None:
            raise KeyError(message_id)
        return position

    def id_at(self, position: int) -> str:
        return self.full[position].id or ""


def _folded_parts(history: Sequence[BaseMessage], shared: int, cursor: int, ahead: Iterable[str]) -> tuple[int, set[str]]:
    """``{*ids[:cursor], *ahead}`` as (a prefix length within the shared part, the other ids):
    what a merge compares without listing the ids of the shared part."""
    return min(cursor, shared), {*(m.id or "" for m in history[shared:cursor]), *ahead}


def merge_states(
    base: dict[str, Any],
    base_count: int,
    mine: SessionState,
    theirs: SessionState,
    shared: int = 0,
    prefix: Callable[[str], int | None] | None = None,
    own_theirs: bool = False,
) -> tuple[SessionState, list[BaseMessage], bool, Order]:
    """The merged state, my messages the store lacks (to append), whether my fold was dropped,
    and the merged history's positions.

    Args:
        base: the state document this writer last read or wrote.
        base_count: how many of my messages the store held at the base: a prefix of theirs, unless
            another writer cleared the session since (then they stay dropped).
        mine: the session in memory.
        theirs: the state the store holds now (its history includes every stored message).
        shared: how many first messages both histories hold, the same objects in the same places
            (the ones this writer read); with ``prefix`` (my index: id -> position) the merge
            costs O(what changed after them), not O(history).
        own_theirs: ``theirs`` is the caller's to give away: its history list becomes the merged
            one (extended in place, no copy of it).
    """
    order_prefix = prefix if shared and shared <= base_count else None
    shared = shared if order_prefix is not None else 0
    stored = {m.id or "" for m in theirs.full_chat_history[shared:]}  # my messages before `shared` are theirs too
    unsaved = [m for m in mine.full_chat_history[base_count:] if m.id not in stored]
    if own_theirs and isinstance(theirs.full_chat_history, list | Spliced):  # handed over: the merged history is built on it
        full = theirs.full_chat_history
        full.extend(unsaved)
    else:
        full = [*theirs.full_chat_history, *unsaved]
    order = Order(full, shared, order_prefix)

    mine_window = [m.id or "" for m in mine.current_chat_history]
    window_ids = _window(list(base.get("window", [])), mine_window, [m.id or "" for m in theirs.current_chat_history], order)
    by_id = {m.id: m for m in theirs.current_chat_history} | {m.id: m for m in mine.current_chat_history}
    window = []
    for message_id in window_ids:
        position = order.get(message_id)
        message = full[position] if position is not None else by_id.get(message_id)
        if message is not None:
            window.append(message)
    window = _paired(window)

    base_memo = base.get("memo") or {}
    mine_changed, theirs_changed = mine.memo != base_memo, theirs.memo != base_memo
    theirs_pre, theirs_extra = _folded_parts(theirs.full_chat_history, shared, theirs.memo_cursor, theirs.memo_ahead)
    mine_pre, mine_extra = _folded_parts(mine.full_chat_history, shared, mine.memo_cursor, mine.memo_ahead)

    def theirs_folded(message_id: str) -> bool:
        position = order.get(message_id)
        return message_id in theirs_extra or (position is not None and position < theirs_pre)

    dropped_fold = mine_changed and theirs_changed and (
        any(order.id_at(k) not in theirs_extra for k in range(theirs_pre, mine_pre))
        or any(not theirs_folded(i) for i in mine_extra))
    if mine_changed and not theirs_changed:
        memo, pre, extra = mine.memo, max(theirs_pre, mine_pre), theirs_extra | mine_extra
    else:
        memo, pre, extra = theirs.memo, theirs_pre, theirs_extra
        if mine_changed and not dropped_fold:  # my edits (no fold of mine dropped) go on theirs key by key
            memo = edits_on(base_memo, mine.memo, theirs.memo)
    cursor = pre
    while cursor < len(full) and order.id_at(cursor) in extra:
        cursor += 1
    ahead = frozenset(i for i in extra if (position := order.get(i)) is not None and position >= cursor)
    base_records = base.get("fold_records") or {}  # like the memo: the writer that changed them since the base
    mine_records = mine.fold_records != base_records and theirs.fold_records == base_records
    records = mine.fold_records if mine_records else theirs.fold_records

    base_turns = int(base.get("turns", 0))
    my_replies = mine.turns - base_turns
    turns = theirs.turns + max(0, my_replies)
    last_resize = theirs.last_resize_turn
    if mine.last_resize_turn != int(base.get("last_resize_turn", 0)):
        last_resize = max(last_resize, mine.last_resize_turn + (theirs.turns - base_turns))
    base_usage = {record.get("id") for record in base.get("usage") or ()}
    mine_usage = {record.get("id") for record in mine.usage}
    theirs_usage = {record.get("id") for record in theirs.usage}
    consumed = base_usage - mine_usage  # my commit archived them: they stay consumed
    usage = (*(r for r in theirs.usage if r.get("id") not in consumed),
             *(r for r in mine.usage if r.get("id") not in base_usage and r.get("id") not in theirs_usage))
    archives = merge_archives(base.get("archives") or {}, mine.archives or {}, theirs.archives or {})
    settings = mine.settings if mine.settings.to_dict() != base.get("settings", mine.settings.to_dict()) else theirs.settings
    merged = SessionState(
        id=theirs.id,
        full_chat_history=full,
        current_chat_history=window,
        memo=dict(memo),
        settings=settings,
        turns=turns,
        last_resize_turn=min(last_resize, turns),
        memo_cursor=cursor,
        memo_ahead=ahead,
        archived_through=max(theirs.archived_through, min(mine.archived_through, len(full))),
        usage=usage,
        archives=archives,
        fold_records=dict(records),
    )
    return merged, unsaved, dropped_fold, order



@dataclass(frozen=True, slots=True)
class Merged:
    """A merge of a session with a stored snapshot.

    Attributes:
        theirs: the stored state (the snapshot decoded).
        state: the merged state.
        unsaved: my messages the store does not hold (to append).
        metadata: theirs, updated with the keys I changed since the base (nested dicts key by key).
        arrived: arrival times of the stored records, by message id.
        stored: the merged history's positions by id (``in``: whether an id is in it; window
            messages outside it are kept inline).
        dropped_fold: both writers folded into the memo; mine is dropped and refolded later.
    """

    theirs: SessionState
    state: SessionState
    unsaved: list[BaseMessage]
    metadata: dict[str, Any]
    arrived: dict[str, str]
    stored: Order
    dropped_fold: bool
    theirs_count: int = -1  # messages in theirs (its history list may be the merged one, extended)


def merge_snapshot(base: dict[str, Any], session: Session, snapshot: Snapshot, held: int, stored_count: int) -> Merged:
    """Merge what ``snapshot`` holds (its records from ``held`` on) with ``session``'s changes since ``base``.

    ``held``: how many of the session's first messages the store holds; the stored history is
    built on the session's own list as a ``Spliced`` view of them (no copy of the history: ``adopt``
    rearranges that list in place, at O(what changed)); the session's history must be loaded
    when ``held`` > 0. ``stored_count``: how many of the session's messages the store held at the
    base (usually ``held``; more when another writer cleared the session since: those stay dropped).
    Pure: the session is not changed (``adopt`` does that).
    """
    arrived: dict[str, str] = {}
    history = session.full_chat_history
    if held and not is_loaded(history):
        raise ValueError("merge_snapshot needs the session's history loaded (history.load()) when the store holds some of it")
    own = history if isinstance(history, list) else history.load() if held else []  # type: ignore[attr-defined]
    shared = Spliced(own, held)  # theirs is built on it: the first ``held`` messages are mine, by my index
    theirs, metadata = snapshot_state(snapshot, f"session {session.id!r}", shared, arrived=arrived, own=True)
    theirs_count = len(theirs.full_chat_history)
    merged, unsaved, dropped_fold, order = merge_states(base, stored_count, session.state, theirs, held,
                                                        session._ledger.position, own_theirs=True)
    metadata = edits_on(base.get("metadata") or {}, session.metadata, metadata, mine_wins=True)  # nested and removed keys too
    return Merged(theirs, merged, unsaved, metadata, arrived, order, dropped_fold, theirs_count)


def adopt(session: Session, result: Merged, late: Sequence[BaseMessage] = ()) -> None:
    """Adopt a merge in place (``late``: messages appended to the session meanwhile, kept on top).

    The merged history is the session's own list, its first ``shared`` messages kept and what
    followed them replaced by the merge's tail, in place (``Spliced.settle``): O(what changed),
    and only that is indexed again. If the install fails, the list is put back as it was."""
    state, full = result.state, result.state.full_chat_history
    if isinstance(full, Spliced):
        before = Spliced(full.base, full.shared, full.base[full.shared :])  # the session's history as it is now
        state.full_chat_history = full.settle()
        try:
            session._core.install(state, shared=full.shared, before=before)  # Session.restore, with what the merge knows
        except BaseException:
            full.base[full.shared :] = before.tail
            state.full_chat_history = full
            raise
    else:
        session._core.install(state, shared=result.stored.shared)
    session.metadata = result.metadata
    session.arrived_at.update(result.arrived)  # in place: O(what arrived), not a copy of every stamp
    for message in late:
        if message not in session:
            session.append_message(message)
