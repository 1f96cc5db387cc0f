"""Between a Session and what stores keep: message records and the state document.

The state holds the window as message ids (a reference to the history, never a copy);
a window message that is not in the history (a custom handler's summary, say) is kept
inline. Records written after the state (a crash between the two writes, or another
writer) are not lost on load: they join the history and the window.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
import logging
import sys
from typing import TYPE_CHECKING, Any
import warnings

from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    ChatMessage,
    FunctionMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
    message_to_dict,
    messages_from_dict,
)

from session_graph._base.exact_json import check_stored, unstorable
from session_graph._base.gc import paused_gc
from session_graph._base.ids import STAMP_WIDTH
from session_graph._base.progress import Progress, tracked
from session_graph.compression.records import checked_records, split_records
from session_graph.errors import SessionGraphError, StoreError
from session_graph.interop.export import commit_fields
from session_graph.messages import content_parts, role_of
from session_graph.resize.arrivals import PLACEHOLDER, LoadedStamps, stamps_of
from session_graph.resize.history import LazyHistory, Spliced
from session_graph.resize.state import SessionState
from session_graph.resize.trace import SAVED_TRACE, ResizeTrace
from session_graph.settings import SessionSettings
from session_graph.stores.base import SCHEMA_VERSION, Snapshot, check_schema
from session_graph.stores.records import Records

if TYPE_CHECKING:  # the session module does not depend on stores; only this hint does
    from session_graph.session import Session

log = logging.getLogger(__name__)

__all__ = ["message_record", "message_records", "message_text", "messages_of", "record_message", "session_state", "snapshot_state", "state_document", "unencodable", "window_start"]


def message_text(message: BaseMessage) -> str:
    """The text of a message (text parts joined), for search and exports."""
    return "".join(
        part if isinstance(part, str) else str(part.get("text", "")) for part in content_parts(message)
        if isinstance(part, str) or part.get("type") == "text"
    )


Middle = tuple[Callable[[int], "list[BaseMessage]"], "Callable[[int], list[str | None]] | None"]
"""``(load, ids)``: ``load(stop)`` reads the messages at positions ``1 .. stop - 1``; ``ids(stop)``
reads only their ids (None when the store cannot)."""


def _gap(records: Sequence[dict[str, Any]], state: dict[str, Any]) -> int:
    """Where a window read resumes after record 0 (1: the records are contiguous, or a full read).

    A window read resumes at the state's ``window_start``; a full read whose numbering has a gap
    (a line removed from the log by hand, a damaged one quarantined) is no window read: taken for
    one, its history waited for messages that are not there, and no load of the session could
    ever succeed."""
    if len(records) >= 2 and records[0].get("seq") == 0 and isinstance(records[1].get("seq"), int):
        start = int(records[1]["seq"])
        if start == int(state.get("window_start", 0) or 0):
            return start
    return 1


def _held(full: Sequence[BaseMessage]) -> Any:
    return full.held() if isinstance(full, LazyHistory) else enumerate(full)


def _by_id(full: Sequence[BaseMessage], wanted: set[Any]) -> dict[Any, BaseMessage]:
    """The messages of ``full`` with the ids ``wanted`` (the newest of a repeated id), read from
    the end until all are found: O(from the window's start), not O(history)."""
    found: dict[Any, BaseMessage] = {}
    if not wanted:
        return found
    newest_first = (m for _, m in reversed(list(_held(full)))) if isinstance(full, LazyHistory) else reversed(full)
    for message in newest_first:
        if message.id in wanted and message.id not in found:
            found[message.id] = message
            if len(found) == len(wanted):
                break
    return found


def message_record(message: BaseMessage, ts: str) -> dict[str, Any]:
    """A record for one message; the store adds ``seq``."""
    return {"id": message.id, "ts": ts, "role": role_of(message), "message": message_to_dict(message)}


def message_records(messages: Sequence[BaseMessage], arrived: Any, now: str) -> list[dict[str, Any]]:
    """The records of ``messages`` (a save's new ones), each stamped when ``arrived`` (a session's
    ``arrived_at``) says it arrived, else ``now``."""
    if not messages:  # a prune's save: no stamps to read
        return []
    return [message_record(message, stamp) for message, stamp in zip(messages, stamps_of(arrived, messages, now), strict=True)]


_CLASSES: dict[str, type[BaseMessage]] = {
    "human": HumanMessage, "ai": AIMessage, "system": SystemMessage, "tool": ToolMessage,
    "function": FunctionMessage, "chat": ChatMessage,
}


_TYPE_NAMES = {name: name for name in _CLASSES}
_FIELDS = {cls: frozenset(cls.model_fields) for cls in _CLASSES.values()}
_DEFAULTS = {cls: {name: field.get_default(call_default_factory=True) for name, field in cls.model_fields.items()}
             for cls in _CLASSES.values()}
_SHARED_TEXT = 64  # a value this short that many messages repeat (a tool's name, a status) is kept once, as a literal is


def _shared(value: Any) -> Any:
    return sys.intern(value) if type(value) is str and len(value) <= _SHARED_TEXT else value


def _calls(calls: list[Any]) -> list[Any]:
    """Tool calls with their names and kinds kept once across messages (each call's dict as read)."""
    for call in calls:
        if type(call) is dict:
            for key in ("name", "type"):
                if key in call:
                    call[key] = _shared(call[key])
    return calls


def _built(cls: type[BaseMessage], data: dict[str, Any]) -> BaseMessage:
    """``cls.model_construct(**data)`` for a ``model_dump`` (every field, nothing else), without
    its per-field bookkeeping (3x faster; the message is the same, ``==`` included)."""
    if data.keys() != _FIELDS[cls]:
        return cls.model_construct(**data)
    message = cls.__new__(cls)
    fields = {k: v for k, v in data.items()}  # built by insertion: a compact dict (272 bytes, a copy is 352)
    fields["type"] = _TYPE_NAMES[fields["type"]]  # one shared string per type, as the class default is
    for key in ("name", "status"):
        if key in fields:
            fields[key] = _shared(fields[key])
    if fields.get("tool_calls"):
        fields["tool_calls"] = _calls(fields["tool_calls"])
    object.__setattr__(message, "__dict__", fields)
    # the fields a caller would have passed: what differs from its default, as a message made in
    # process has (``type``, ``status="success"`` are defaults; a set of five or more is 3x bigger)
    defaults = _DEFAULTS[cls]
    object.__setattr__(message, "__pydantic_fields_set__",
                       {k for k, v in data.items() if k == "content" or (k != "type" and v != defaults[k])})
    object.__setattr__(message, "__pydantic_extra__", {})  # messages allow extras: an empty dict, as pydantic sets
    object.__setattr__(message, "__pydantic_private__", None)
    return message


def record_message(record: dict[str, Any], where: str) -> BaseMessage:
    """The message of a record, or a StoreError naming the record.

    A record this library wrote holds ``message_to_dict`` of a message it validated on
    append: its fields are built without validating them again (four times faster); anything
    else goes through langchain-core's validating loader.
    """
    message = record.get("message")
    if isinstance(message, dict) and isinstance(message.get("data"), dict):
        cls = _CLASSES.get(message.get("type"))  # type: ignore[arg-type]
        data = message["data"]
        if cls is not None and data.get("type") == message.get("type") and isinstance(data.get("content"), str | list):
            return _built(cls, data)
    try:
        (message,) = messages_from_dict([record["message"]])
    except Exception as error:  # langchain raises KeyError/ValueError/ValidationError
        raise StoreError(f"{where}: record {record.get('seq')} is not a valid message: {error}") from error
    return message


def messages_of(
    records: Sequence[dict[str, Any]], where: str, held: Sequence[BaseMessage] = (), progress: Progress | None = None,
    arrived: dict[str, str] | LoadedStamps | None = None,
    own: bool = False,
) -> list[BaseMessage]:
    """``held`` and the messages of ``records``, in one pass: each record is made into its message
    before the next is decoded (``Records`` are drained), so no record outlives its message and
    the heap is left as compact as messages made in process. ``arrived``: filled with each
    record's ``ts`` by its id (the message's own id string, not a second copy of it), or a
    ``LoadedStamps`` (each stamp a number by position, as an appended message's is). ``own``:
    ``held`` is a list (or a ``Spliced`` history) the caller hands over, extended in place (no copy of it)."""
    items = records.drain() if isinstance(records, Records) else records
    full: list[BaseMessage] = held if own and isinstance(held, list | Spliced) else list(held)  # type: ignore[assignment]
    add = full.append
    if isinstance(arrived, LoadedStamps):  # ``LoadedStamps.write`` inlined: a call per record is a percent of a load
        assert arrived.text is not None
        write, odd, at, first = arrived.text.write, arrived.stamps, arrived.odd, len(full)
        for record in tracked(items, len(records), progress):
            message = record_message(record, where)
            add(message)
            mid, rid, stamp = message.id, record.get("id") or "", record.get("ts", "")
            if mid and mid == rid and type(stamp) is str and len(stamp) == STAMP_WIDTH:
                write(stamp)
            else:
                write(PLACEHOLDER)
                at.append(len(full) - 1 - first)
                odd[mid if mid and mid == rid else str(rid)] = stamp
        arrived.count = len(full) - first
        arrived.finish(full, first)
        return full
    for record in tracked(items, len(records), progress):
        message = record_message(record, where)
        add(message)
        if arrived is not None:
            rid = record.get("id") or ""
            arrived[message.id if message.id and message.id == rid else str(rid)] = record.get("ts", "")
    return full


def session_state(session: Session, created_at: str, updated_at: str) -> dict[str, Any]:
    """The state document of a session (everything but the messages themselves). O(window)."""
    return state_document(session.state, session.metadata, created_at, updated_at, session.__contains__, session.trace,
                          session._ledger.index_of)


def state_document(
    state: SessionState,
    metadata: dict[str, Any],
    created_at: str,
    updated_at: str,
    in_history: Callable[[Any], bool],
    trace: ResizeTrace | None,
    index_of: Callable[[BaseMessage], int | None],
) -> dict[str, Any]:
    """The state document of a state; window messages ``in_history`` refuses are kept inline;
    the newest ``SAVED_TRACE`` records of ``trace`` go with it. ``window_start`` is where a lazy
    load starts reading (see ``history.py``): the window's first message, or the memo's cursor
    when a fold still has to read from before it. O(window): ``index_of`` (the history's index)
    places each window message once, for both the inline messages and ``window_start``."""
    check_stored(metadata, "session.metadata")  # kept exactly by every store, or refused here (nothing written)
    check_stored(state.memo, "session.memo")
    window = state.current_chat_history
    positions = [index_of(m) for m in window]
    inline = {m.id: message_to_dict(m) for m, p in zip(window, positions, strict=True) if p is None and not in_history(m)}
    start = window_start(state, min((p for p in positions if p is not None), default=len(state.full_chat_history)))
    return {
        "schema": SCHEMA_VERSION,
        "key": state.id,
        "created_at": created_at,
        "updated_at": updated_at,
        "metadata": metadata,
        "memo": state.memo,
        "settings": state.settings.saved(),  # shared, never changed: copied once per change of the settings
        "turns": state.turns,
        "last_resize_turn": state.last_resize_turn,
        "memo_cursor": state.memo_cursor,
        "memo_ahead": sorted(state.memo_ahead),
        **({"fold_records": state.fold_records} if state.fold_records else {}),
        "window": [m.id for m in window],
        "inline": inline,
        "message_count": len(state.full_chat_history),
        "window_start": start,
        **({"trace": trace.dump(SAVED_TRACE)} if trace else {}),
        **commit_fields(state),
    }


def window_start(state: SessionState, start: int) -> int:
    """``start`` (the window's first position), or the memo's cursor when a fold still reads from before it."""
    limits = state.settings.resolved()
    if limits.memo_enabled or limits.summary_enabled:
        start = min(start, state.memo_cursor)
    return start


def snapshot_state(
    snapshot: Snapshot,
    where: str,
    held: Sequence[BaseMessage] = (),
    progress: Progress | None = None,
    middle: Middle | None = None,
    arrived: dict[str, str] | LoadedStamps | None = None,
    own: bool = False,
) -> tuple[SessionState, dict[str, Any]]:
    """Rebuild a session's state (and its metadata) from a stored snapshot.

    The records are read once, each made into its message before the next is decoded
    (``stores.records``); a snapshot whose records are ``Records`` is spent afterwards.

    ``held``: the messages before the snapshot's first record, when it was read with ``since``.
    ``progress``: told ``(records decoded, records)`` (see ``_progress``).
    ``middle``: how to read the messages a window read skipped (``read(window=True)`` gives
    record 0 and the records from the window on); the full history is then a ``LazyHistory``.
    ``arrived``: filled with each record's arrival time (``ts``) by message id, in the same pass
    (or a ``LoadedStamps``: by position, for ``Arrivals.adopt``).
    ``own``: ``held`` is a fresh list (or a ``Spliced`` view) the caller hands over: the history is
    built on it, not on a copy.

    Raises:
        StoreError: a record or the state document is damaged (naming which).
    """
    try:
        with paused_gc():
            return _snapshot_state(snapshot, where, held, progress, middle, arrived, own)
    except (ValueError, TypeError, KeyError, AttributeError) as error:
        raise StoreError(f"{where}: the stored state document is damaged ({error}); restore it from a backup.") from None


def _say_missing(records: Sequence[dict[str, Any]], where: str) -> None:
    """Say when a full read's record numbers skip (a message line removed from the log by hand):
    the session loads without those messages, which is not to pass unsaid. O(1): the numbers
    rise from 0 as written, so the last one tells."""
    last = records[len(records) - 1].get("seq") if len(records) else None
    if isinstance(last, int) and records[0].get("seq") == 0 and last >= len(records):
        missing = last + 1 - len(records)
        message = (f"{where}: {missing} message{'s' if missing > 1 else ''} of the stored history "
                   f"{'are' if missing > 1 else 'is'} missing (its record numbers skip: {len(records)} read, numbered up to "
                   f"{last}): a line removed from the store's log by hand, or a damaged one quarantined? The session loads "
                   "without them; restore the log from a backup to get them back.")
        warnings.warn(message, RuntimeWarning, stacklevel=4)
        log.warning("%s", message)


def _snapshot_state(
    snapshot: Snapshot, where: str, held: Sequence[BaseMessage], progress: Progress | None, middle: Middle | None,
    arrived: dict[str, str] | LoadedStamps | None = None, own: bool = False,
) -> tuple[SessionState, dict[str, Any]]:
    state = check_schema(snapshot.state, where)
    start = _gap(snapshot.records, state) if not held else 1
    if start == 1 and not held:
        _say_missing(snapshot.records, where)
    full = messages_of(snapshot.records, where, held, progress, arrived, own)
    if start > 1:
        if middle is None:
            raise StoreError(f"{where}: the store read from message {start} on but nothing can read the messages before it.")
        load, ids = middle
        full = LazyHistory(full[0], start, full[1:], lambda: load(start), (lambda: ids(start)) if ids is not None else None)
        if isinstance(arrived, LoadedStamps):
            arrived.skip_first(start, full[0])  # the tail's stamps by position from ``start``
    inline = {key: messages_from_dict([value])[0] for key, value in (state.get("inline") or {}).items()}
    window_ids = state["window"] if "window" in state else [m.id for m in full]
    by_id = _by_id(full, {i for i in window_ids if i not in inline})
    window = [by_id.get(i) or inline.get(i) for i in window_ids]
    window = [m for m in window if m is not None]
    counted = min(int(state.get("message_count", len(full))), len(full))
    late = full[max(counted, full.start if isinstance(full, LazyHistory) else 0) :]  # written after the state: keep them, in the window too
    held = {m.id for m in window}
    window += [m for m in late if m.id not in held]
    turns = int(state.get("turns", 0)) + sum(1 for m in late if isinstance(m, AIMessage) and not m.tool_calls)
    try:
        settings = SessionSettings(state.get("settings") or {})
    except SessionGraphError as error:
        raise StoreError(f"{where}: stored settings are invalid: {error}") from None
    stored = state.get("fold_records")
    memo, records = split_records(dict(state.get("memo") or {}), dict(stored) if isinstance(stored, dict) else {})  # older: in the memo
    records, problems = checked_records(records)
    if problems or (stored is not None and not isinstance(stored, dict)):
        log.warning("%s: stored fold records dropped (bookkeeping only: a back-off or a refused compression starts over): %s",
                    where, "; ".join(problems) or f"not an object: {stored!r:.80}")
    return (
        SessionState(
            id=snapshot.key,
            full_chat_history=full,
            current_chat_history=window,
            memo=memo,
            settings=settings,
            turns=turns,
            last_resize_turn=min(int(state.get("last_resize_turn", 0)), turns),
            memo_cursor=min(int(state.get("memo_cursor", 0)), len(full)),
            memo_ahead=frozenset(state.get("memo_ahead") or ()),
            archived_through=min(int(state.get("archived_through", 0)), len(full)),
            usage=tuple(dict(record) for record in state.get("usage") or ()),
            archives=dict(state.get("archives") or {}),
            fold_records=records,
        ),
        dict(state.get("metadata") or {}),
    )


def unencodable(session: Any, error: UnicodeEncodeError) -> StoreError:
    """The error for a save that met text no UTF-8 encodes (a lone surrogate), naming where it is:
    messages are checked when appended, so it is in what a user edits in place, the memo or the
    metadata, named by ``_base.exact_json.unstorable`` (read only here, on the failure: the save
    path pays nothing for it)."""
    for name, value in (("memo", session.memo), ("metadata", session.metadata)):
        why = unstorable(value, f"session.{name}")
        if why is not None:
            return StoreError(f"session {session.id!r} cannot be saved: {why}. Nothing was written.")
    return StoreError(
        f"session {session.id!r} cannot be saved: the session's state holds a lone surrogate "
        f"({error.object[error.start:error.end]!r}), which is not valid UTF-8; replace it (text decoded with "
        "errors='replace') and save again. Nothing was written."
    )
