"""JSON/YAML export and import of a session (``yaml.safe_*`` only).

A document is a dict with ``schema`` (its format version) and ``id, memo,
full_chat_history, current_chat_history, settings, turns, last_resize_turn, memo_cursor``
(plus ``memo_ahead`` after merged saves, and ``trace``: the resize records, see ``resize/trace.py``). Messages are langchain-core's ``message_to_dict``
form (``{"type", "data"}``), which keeps every field. The window is written in full, as the
spec asks; on import its messages are linked back to the same objects as in the full
history. Loading is strict and validates everything before anything changes: every key
present and of its type, no unknown key, no newer schema, no duplicate message id, every
message storable, YAML aliases and nesting bounded; a document written before ``schema``
existed (all the other keys present) still loads.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from difflib import get_close_matches
import json
import re
from typing import Any

from langchain_core.messages import BaseMessage, message_to_dict, messages_from_dict
import yaml

from session_graph.compression.records import checked_records, split_records
from session_graph.errors import DocumentError, DocumentTypeError, MessageError, SettingsError
from session_graph.messages import check_storable
from session_graph.resize.state import SessionState
from session_graph.resize.trace import ResizeTrace
from session_graph.settings import SessionSettings

__all__ = ["SCHEMA", "check_keys", "dump_state", "load_state", "parse_json", "parse_yaml", "read_document", "register_reader", "session_document",
           "to_json", "to_yaml"]

KEYS = ("id", "memo", "full_chat_history", "current_chat_history", "settings", "turns", "last_resize_turn", "memo_cursor")
SCHEMA = 1
"""The document format version this library writes and reads (newer ones are refused)."""
_OPTIONAL = ("schema", "memo_ahead", "trace", "archived_through", "usage", "archives", "fold_records")
_READERS: list[Callable[[Any], dict[str, Any] | None]] = []


def register_reader(reader: Callable[[Any], dict[str, Any] | None]) -> None:
    """Let ``read_document`` (and so ``Session.from_json``/``from_yaml``) read another document shape:
    ``reader(data)`` returns it as a session document, or None when it is not its shape.
    ``session_graph.stores.portable`` registers the store export (``{"key", "state", "messages"}``)."""
    if reader not in _READERS:
        _READERS.append(reader)


MAX_ALIASES = 32
MAX_NODES = 2_000_000
MAX_NESTING = 200
_ARCHIVE_NAME = re.compile(r"^archive_\d{1,12}$")  # what commit() and the OpenViking import name archives


def dump_state(state: SessionState) -> dict[str, Any]:
    """The session as a plain dict of JSON-safe values."""
    return {
        "schema": SCHEMA,
        "id": state.id,
        "memo": state.memo,
        "full_chat_history": [message_to_dict(m) for m in state.full_chat_history],
        "current_chat_history": [message_to_dict(m) for m in state.current_chat_history],
        "settings": state.settings.to_dict(),
        "turns": state.turns,
        "last_resize_turn": state.last_resize_turn,
        "memo_cursor": state.memo_cursor,
        **({"memo_ahead": sorted(state.memo_ahead)} if state.memo_ahead else {}),
        **({"fold_records": state.fold_records} if state.fold_records else {}),
        **commit_fields(state),
    }


def to_json(data: dict[str, Any]) -> str:
    """JSON text of a dumped session (ASCII-safe)."""
    return json.dumps(data, ensure_ascii=True)


def to_yaml(data: dict[str, Any]) -> str:
    """YAML text of a dumped session."""
    return yaml.safe_dump(data, allow_unicode=True, sort_keys=False)


def parse_json(text: str) -> Any:
    """Parse JSON text, naming the position of a syntax error."""
    if not isinstance(text, str | bytes | bytearray):
        raise DocumentTypeError(f"load_json expects JSON text, got {type(text).__name__}.")
    try:
        return _bounded(json.loads(text))
    except RecursionError as error:
        raise DocumentError(f"the session document nests deeper than {MAX_NESTING} levels.") from error
    except ValueError as error:  # JSONDecodeError, UnicodeDecodeError
        raise DocumentError(f"the session document is not valid JSON: {error}.") from error


class _BoundedLoader(yaml.SafeLoader):
    """yaml's safe loader, refusing more than ``MAX_ALIASES`` aliases (alias bombs) and deep nesting."""

    def __init__(self, stream: Any) -> None:
        super().__init__(stream)
        self._aliases = 0
        self._depth = 0

    def compose_node(self, parent: Any, index: Any) -> Any:
        if self.check_event(yaml.AliasEvent):
            self._aliases += 1
            if self._aliases > MAX_ALIASES:
                raise DocumentError(f"the session document uses more than {MAX_ALIASES} YAML aliases; export it again.")
        self._depth += 1
        try:
            if self._depth > MAX_NESTING:
                raise DocumentError(f"the session document nests deeper than {MAX_NESTING} levels.")
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1


def parse_yaml(text: str) -> Any:
    """Parse YAML text safely (no tags, bounded aliases and nesting), naming the position of a syntax error."""
    if not isinstance(text, str | bytes):
        raise DocumentTypeError(f"load_yaml expects YAML text, got {type(text).__name__}.")
    try:
        return _bounded(yaml.load(text, Loader=_BoundedLoader))  # a SafeLoader subclass: no arbitrary tags
    except RecursionError as error:
        raise DocumentError(f"the session document nests deeper than {MAX_NESTING} levels.") from error
    except (yaml.YAMLError, ValueError) as error:  # UnicodeDecodeError included
        raise DocumentError(f"the session document is not valid YAML: {error}.") from error


def _bounded(data: Any) -> Any:
    """``data``, after checking that, with shared references expanded, it stays small and shallow."""
    nodes, stack = 0, [(data, 0)]
    while stack:
        item, depth = stack.pop()
        nodes += 1
        if nodes > MAX_NODES:
            raise DocumentError(f"the session document expands to more than {MAX_NODES:,} values; it is not a session export.")
        if depth > MAX_NESTING:
            raise DocumentError(f"the session document nests deeper than {MAX_NESTING} levels.")
        if isinstance(item, dict):
            stack.extend((value, depth + 1) for value in item.values())
        elif isinstance(item, list):
            stack.extend((value, depth + 1) for value in item)
    return data


def load_state(data: Any, *, keep_id: str) -> SessionState:
    """Validate a document and build the state it describes (nothing is changed on error).

    Args:
        data: the parsed document.
        keep_id: the id to use when the document has none.

    Raises:
        DocumentTypeError: the document is not a dict.
        DocumentError: a key has the wrong type, a message is malformed, counters disagree.
    """
    if not isinstance(data, Mapping):
        raise DocumentTypeError(f"a session document must be a dict with {', '.join(KEYS)}; got {type(data).__name__}.")
    check_keys(data)
    session_id = data.get("id", keep_id)
    if not isinstance(session_id, str) or not session_id:
        raise DocumentError(f"'id' must be a non-empty string, got {session_id!r}.")
    memo = data.get("memo", {})
    if not isinstance(memo, dict):
        raise DocumentError(f"'memo' must be a dict, got {type(memo).__name__}.")
    full = _messages(data.get("full_chat_history", []), "full_chat_history")
    current = _messages(data.get("current_chat_history", []), "current_chat_history")
    seen: set[str] = set()
    for index, message in enumerate(full):
        if message.id in seen:
            raise DocumentError(f"full_chat_history[{index}] repeats message id {message.id!r}; every message needs its own id.")
        seen.add(message.id or "")
    by_id = {m.id: m for m in full if m.id}
    current = [by_id[m.id] if by_id.get(m.id) == m else m for m in current]  # share, not copy
    raw_settings = data.get("settings", {})
    if not isinstance(raw_settings, Mapping):
        raise DocumentError(f"'settings' must be a dict, got {type(raw_settings).__name__}.")
    try:
        settings = SessionSettings(raw_settings)
    except SettingsError as error:
        raise DocumentError(f"'settings' in the document is invalid: {error}") from error
    counters = {key: data.get(key, 0) for key in ("turns", "last_resize_turn", "memo_cursor")}
    for key, value in counters.items():
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise DocumentError(f"{key!r} must be a whole number >= 0, got {value!r}.")
    if counters["memo_cursor"] > len(full):
        raise DocumentError(
            f"'memo_cursor' is {counters['memo_cursor']} but the full history has only {len(full)} messages."
        )
    if counters["last_resize_turn"] > counters["turns"]:
        raise DocumentError(f"'last_resize_turn' ({counters['last_resize_turn']}) is after 'turns' ({counters['turns']}).")
    ledger = _commit_ledger(data, len(full))
    records = data.get("fold_records") or {}
    if not isinstance(records, Mapping):
        raise DocumentError(f"'fold_records' must be a dict (a fold's back-off, a refused compression), got {type(records).__name__}.")
    memo, records = split_records(memo, dict(records))  # a document written before: they were in the memo
    records, problems = checked_records(records)
    if problems:
        raise DocumentError(f"'fold_records' in the document is invalid: {'; '.join(problems)} (remove the entry: "
                            "the back-off or the refused compression starts over).")
    return SessionState(
        id=session_id,
        full_chat_history=full,
        current_chat_history=current,
        memo=memo,
        fold_records=records,
        settings=settings,
        memo_ahead=frozenset(data.get("memo_ahead") or ()),
        **counters,
        **ledger,
    )


def commit_fields(state: SessionState) -> dict[str, Any]:
    """The commit ledger of a state (``archived_through``, ``usage``, ``archives``), where not at its default."""
    fields: dict[str, Any] = {}
    if state.archived_through:
        fields["archived_through"] = state.archived_through
    if state.usage:
        fields["usage"] = [dict(record) for record in state.usage]
    if state.archives:
        fields["archives"] = state.archives
    return fields


def _commit_ledger(data: Mapping[str, Any], count: int) -> dict[str, Any]:
    through = data.get("archived_through", 0)
    if isinstance(through, bool) or not isinstance(through, int) or not 0 <= through <= count:
        raise DocumentError(f"'archived_through' must be a whole number from 0 to {count} (the history's length), got {through!r}.")
    usage = data.get("usage", [])
    if not isinstance(usage, list) or not all(isinstance(r, Mapping) and isinstance(r.get("uri"), str) for r in usage):
        raise DocumentError("'usage' must be a list of used() records (dicts with a 'uri').")
    archives = data.get("archives", {})
    if not isinstance(archives, Mapping) or not isinstance(archives.get("next", 0), int) or not isinstance(archives.get("pending", {}), Mapping):
        raise DocumentError("'archives' must be a dict like {'next': 3, 'pending': {...}}.")
    for part in ("pending", "done"):
        table = archives.get(part) or {}
        if not isinstance(table, Mapping):
            raise DocumentError(f"'archives.{part}' must be a dict of archive_NNN names.")
        for name, record in table.items():
            if not isinstance(name, str) or not _ARCHIVE_NAME.match(name) or not isinstance(record, Mapping):
                raise DocumentError(f"'archives.{part}' names {str(name)[:80]!r}; archives are named archive_NNN (digits) "
                                    "and hold a dict. It is not a session export.")
    return {"archived_through": through, "usage": tuple(dict(r) for r in usage), "archives": dict(archives)}


def check_keys(data: Mapping[str, Any]) -> None:
    """Refuse a document from a newer version, with unknown keys, or missing one of ``KEYS``."""
    schema = data.get("schema", SCHEMA)
    if isinstance(schema, bool) or not isinstance(schema, int) or schema < 1:
        raise DocumentError(f"'schema' must be a whole number >= 1 (the format version), got {schema!r}.")
    if schema > SCHEMA:
        raise DocumentError(
            f"the document was written by a newer session_graph (schema {schema}, this one reads up to {SCHEMA}); "
            "upgrade session_graph to load it."
        )
    unknown = [key for key in data if key not in KEYS and key not in _OPTIONAL]
    if unknown:
        hints = [f"{key!r} (did you mean {close[0]!r}?)" if (close := get_close_matches(str(key), [*KEYS, *_OPTIONAL], 1))
                 else repr(key) for key in unknown]
        raise DocumentError(f"the session document has unknown keys: {', '.join(hints)}; it is not a session export.")
    missing = [key for key in KEYS if key not in data]
    if missing:
        raise DocumentError(
            f"the session document lacks {', '.join(missing)}; export a session with session.to_json() or to_yaml()."
        )


def _messages(value: Any, key: str) -> list[BaseMessage]:
    if not isinstance(value, list):
        raise DocumentError(f"{key!r} must be a list of messages, got {type(value).__name__}.")
    messages = []
    for index, item in enumerate(value):
        if not isinstance(item, Mapping) or not isinstance(item.get("type"), str) or not isinstance(item.get("data"), Mapping):
            raise DocumentError(f"{key}[{index}] must be a dict like {{'type': 'human', 'data': {{...}}}}, got {item!r:.80}.")
        try:
            (message,) = messages_from_dict([dict(item)])
            check_storable(message, f"{key}[{index}]")
        except MessageError as error:
            raise DocumentError(str(error)) from error
        except Exception as error:  # langchain raises ValueError/KeyError/ValidationError
            raise DocumentError(f"{key}[{index}] is not a valid {item['type']!r} message: {error}") from error
        messages.append(message)
    return messages


def session_document(state: SessionState, trace: ResizeTrace) -> dict[str, Any]:
    """A session as a plain dict (what ``Session.to_json`` and ``to_yaml`` write): its state, and its trace when it has one."""
    data = dump_state(state)
    if len(trace):
        data["trace"] = trace.dump()
    return data


def read_document(data: Any, *, keep_id: str) -> tuple[SessionState, ResizeTrace]:
    """A parsed document as a state and its trace; raises before the caller adopts anything.

    Besides ``Session.to_dict()``'s shape, a stored session's export (``manager.export(key, "json")``,
    ``session-graph sessions export KEY --format json``) reads too (see ``register_reader``)."""
    for reader in _READERS:
        converted = reader(data)
        if converted is not None:
            data = converted
            break
    state = load_state(data, keep_id=keep_id)
    return state, ResizeTrace.load(data.get("trace"))
