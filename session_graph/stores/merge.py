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
- settings: mine if I changed them since the base, else theirs; metadata: theirs updated
  with the keys I changed.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from langchain_core.messages import BaseMessage

from session_graph.resize.state import SessionState
from session_graph.stores.base import Snapshot
from session_graph.stores.codec import snapshot_state

if TYPE_CHECKING:
    from session_graph.session import Session

__all__ = ["Merged", "adopt", "base_document", "merge_archives", "merge_snapshot", "merge_states", "unfolded_cursor"]

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


def _window(base: list[str], mine: list[str], theirs: list[str], order: dict[str, int]) -> list[str]:
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


def base_document(state: SessionState, document: dict[str, Any]) -> dict[str, Any]:
    """What a later merge starts from: the stored document as the decoded ``state`` reads it
    (records written after the document, a crash's or another writer's, counted in)."""
    return {
        **document,
        "window": [m.id for m in state.current_chat_history],
        "memo": state.memo,
        "turns": state.turns,
        "last_resize_turn": state.last_resize_turn,
        "memo_cursor": state.memo_cursor,
        "memo_ahead": sorted(state.memo_ahead),
        "settings": state.settings.to_dict(),
        "message_count": len(state.full_chat_history),
        "usage": [dict(record) for record in state.usage],
    }


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


def merge_states(
    base: dict[str, Any],
    base_count: int,
    mine: SessionState,
    theirs: SessionState,
) -> tuple[SessionState, list[BaseMessage], bool]:
    """The merged state, my messages the store lacks (to append), and whether my fold was dropped.

    Args:
        base: the state document this writer last read or wrote.
        base_count: how many of my messages the store held at the base: a prefix of theirs, unless
            another writer cleared the session since (then they stay dropped).
        mine: the session in memory.
        theirs: the state the store holds now (its history includes every stored message).
    """
    theirs_ids = [m.id or "" for m in theirs.full_chat_history]
    stored = set(theirs_ids)
    unsaved = [m for m in mine.full_chat_history[base_count:] if m.id not in stored]
    full = [*theirs.full_chat_history, *unsaved]
    ids = [m.id or "" for m in full]

    mine_window = [m.id or "" for m in mine.current_chat_history]
    order = {message_id: position for position, message_id in enumerate(ids)}
    window_ids = _window(list(base.get("window", [])), mine_window, [m.id or "" for m in theirs.current_chat_history], order)
    by_id = {m.id: m for m in theirs.current_chat_history} | {m.id: m for m in mine.current_chat_history}
    by_id.update({m.id: m for m in full})
    window = [by_id[i] for i in window_ids if i in by_id]

    base_memo = base.get("memo") or {}
    mine_changed, theirs_changed = mine.memo != base_memo, theirs.memo != base_memo
    theirs_folded = _folded(theirs_ids, theirs.memo_cursor, theirs.memo_ahead)
    mine_folded = _folded([m.id or "" for m in mine.full_chat_history], mine.memo_cursor, mine.memo_ahead)
    dropped_fold = mine_changed and theirs_changed and bool(mine_folded - theirs_folded)
    if mine_changed and not theirs_changed:
        memo, folded = mine.memo, theirs_folded | mine_folded
    else:
        memo, folded = theirs.memo, theirs_folded
    cursor, ahead = unfolded_cursor(ids, folded)

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
    )
    return merged, unsaved, dropped_fold



@dataclass(frozen=True, slots=True)
class Merged:
    """A merge of a session with a stored snapshot.

    Attributes:
        theirs: the stored state (the snapshot decoded).
        state: the merged state.
        unsaved: my messages the store does not hold (to append).
        metadata: theirs, updated with the keys I changed since the base.
        arrived: arrival times of the stored records, by message id.
        stored: ids of the merged history (window messages outside it are kept inline).
        dropped_fold: both writers folded into the memo; mine is dropped and refolded later.
    """

    theirs: SessionState
    state: SessionState
    unsaved: list[BaseMessage]
    metadata: dict[str, Any]
    arrived: dict[str, str]
    stored: set[str | None]
    dropped_fold: bool


def merge_snapshot(
    base: dict[str, Any], session: Session, snapshot: Snapshot, held: Sequence[BaseMessage], stored_count: int
) -> Merged:
    """Merge what ``snapshot`` holds (its records from ``len(held)`` on) with ``session``'s changes since ``base``.

    ``stored_count``: how many of the session's messages the store held at the base (usually
    ``len(held)``; more when another writer cleared the session since: those stay dropped).
    Pure: the session is not changed (``adopt`` does that).
    """
    arrived: dict[str, str] = {}
    theirs, metadata = snapshot_state(snapshot, f"session {session.id!r}", held, arrived=arrived)
    merged, unsaved, dropped_fold = merge_states(base, stored_count, session.state, theirs)
    base_metadata = base.get("metadata") or {}
    mine = {k: v for k, v in session.metadata.items() if base_metadata.get(k, _MISSING) != v}
    stored = {m.id for m in merged.full_chat_history}
    return Merged(theirs, merged, unsaved, {**metadata, **mine}, arrived, stored, dropped_fold)


def adopt(session: Session, result: Merged, late: Sequence[BaseMessage] = ()) -> None:
    """Adopt a merge in place (``late``: messages appended to the session meanwhile, kept on top)."""
    session.restore(result.state)
    session.metadata = result.metadata
    session.arrived_at = {**session.arrived_at, **result.arrived}
    for message in late:
        if message not in session:
            session.append_message(message)
