"""Between a Session and what stores keep: message records and the state document.

The state holds the window as message ids (a reference to the history, never a copy);
a window message that is not in the history (a custom handler's summary, say) is kept
inline. Records written after the state (a crash between the two writes, or another
writer) are not lost on load: they join the history and the window.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from langchain_core.messages import AIMessage, BaseMessage, message_to_dict, messages_from_dict

from session_graph.errors import SessionGraphError, StoreError
from session_graph.export import commit_fields
from session_graph.messages import content_parts, role_of
from session_graph.settings import SessionSettings
from session_graph.state import SessionState
from session_graph.stores.base import SCHEMA_VERSION, Snapshot, check_schema

if TYPE_CHECKING:  # the session module does not depend on stores; only this hint does
    from session_graph.session import Session

__all__ = ["message_record", "message_text", "record_message", "session_state", "snapshot_state", "state_document"]


def message_text(message: BaseMessage) -> str:
    """The text of a message (text parts joined), for search and exports."""
    return "".join(
        part if isinstance(part, str) else str(part.get("text", "")) for part in content_parts(message)
        if isinstance(part, str) or part.get("type") == "text"
    )


def message_record(message: BaseMessage, ts: str) -> dict[str, Any]:
    """A record for one message; the store adds ``seq``."""
    return {"id": message.id, "ts": ts, "role": role_of(message), "message": message_to_dict(message)}


def record_message(record: dict[str, Any], where: str) -> BaseMessage:
    """The message of a record, or a StoreError naming the record."""
    try:
        (message,) = messages_from_dict([record["message"]])
    except Exception as error:  # langchain raises KeyError/ValueError/ValidationError
        raise StoreError(f"{where}: record {record.get('seq')} is not a valid message: {error}") from error
    return message


def session_state(session: Session, created_at: str, updated_at: str) -> dict[str, Any]:
    """The state document of a session (everything but the messages themselves). O(window)."""
    return state_document(session.state, session.metadata, created_at, updated_at, session.__contains__)


def state_document(
    state: SessionState, metadata: dict[str, Any], created_at: str, updated_at: str, in_history: Callable[[Any], bool]
) -> dict[str, Any]:
    """The state document of a state; window messages ``in_history`` refuses are kept inline."""
    inline = {m.id: message_to_dict(m) for m in state.current_chat_history if not in_history(m)}
    return {
        "schema": SCHEMA_VERSION,
        "key": state.id,
        "created_at": created_at,
        "updated_at": updated_at,
        "metadata": metadata,
        "memo": state.memo,
        "settings": state.settings.to_dict(),
        "turns": state.turns,
        "last_resize_turn": state.last_resize_turn,
        "memo_cursor": state.memo_cursor,
        "memo_ahead": sorted(state.memo_ahead),
        "window": [m.id for m in state.current_chat_history],
        "inline": inline,
        "message_count": len(state.full_chat_history),
        **commit_fields(state),
    }



def snapshot_state(snapshot: Snapshot, where: str, held: Sequence[BaseMessage] = ()) -> tuple[SessionState, dict[str, Any]]:
    """Rebuild a session's state (and its metadata) from a stored snapshot.

    ``held``: the messages before the snapshot's first record, when it was read with ``since``.

    Raises:
        StoreError: a record or the state document is damaged (naming which).
    """
    try:
        return _snapshot_state(snapshot, where, held)
    except (ValueError, TypeError, KeyError, AttributeError) as error:
        raise StoreError(f"{where}: the stored state document is damaged ({error}); restore it from a backup.") from None


def _snapshot_state(snapshot: Snapshot, where: str, held: Sequence[BaseMessage]) -> tuple[SessionState, dict[str, Any]]:
    state = check_schema(snapshot.state, where)
    full = [*held, *(record_message(record, where) for record in snapshot.records)]
    by_id = {m.id: m for m in full}
    inline = {key: messages_from_dict([value])[0] for key, value in (state.get("inline") or {}).items()}
    window = [by_id.get(i) or inline.get(i) for i in state.get("window", [m.id for m in full])]
    window = [m for m in window if m is not None]
    counted = min(int(state.get("message_count", len(full))), len(full))
    late = full[counted:]  # written after the state: keep them, in the window too
    held = {m.id for m in window}
    window += [m for m in late if m.id not in held]
    turns = int(state.get("turns", 0)) + sum(1 for m in late if isinstance(m, AIMessage) and not m.tool_calls)
    try:
        settings = SessionSettings(state.get("settings") or {})
    except SessionGraphError as error:
        raise StoreError(f"{where}: stored settings are invalid: {error}") from None
    return (
        SessionState(
            id=snapshot.key,
            full_chat_history=full,
            current_chat_history=window,
            memo=dict(state.get("memo") or {}),
            settings=settings,
            turns=turns,
            last_resize_turn=min(int(state.get("last_resize_turn", 0)), turns),
            memo_cursor=min(int(state.get("memo_cursor", 0)), len(full)),
            memo_ahead=frozenset(state.get("memo_ahead") or ()),
            archived_through=min(int(state.get("archived_through", 0)), len(full)),
            usage=tuple(dict(record) for record in state.get("usage") or ()),
            archives=dict(state.get("archives") or {}),
        ),
        dict(state.get("metadata") or {}),
    )
