"""JSON/YAML export and import of a session (``yaml.safe_*`` only).

A document is a dict with ``id, memo, full_chat_history, current_chat_history, settings,
turns, last_resize_turn, memo_cursor``. Messages are langchain-core's
``message_to_dict`` form (``{"type", "data"}``), which keeps every field. The window is
written in full, as the spec asks; on import its messages are linked back to the same
objects as in the full history. Loading validates everything before anything changes.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
import json
from typing import Any, Self

from langchain_core.messages import BaseMessage, message_to_dict, messages_from_dict
import yaml

from session_graph.errors import DocumentError, DocumentTypeError, SettingsError
from session_graph.settings import SessionSettings
from session_graph.state import SessionState

__all__ = ["SessionExport", "dump_state", "load_state", "parse_json", "parse_yaml", "to_json", "to_yaml"]

KEYS = ("id", "memo", "full_chat_history", "current_chat_history", "settings", "turns", "last_resize_turn", "memo_cursor")


def dump_state(state: SessionState) -> dict[str, Any]:
    """The session as a plain dict of JSON-safe values."""
    return {
        "id": state.id,
        "memo": state.memo,
        "full_chat_history": [message_to_dict(m) for m in state.full_chat_history],
        "current_chat_history": [message_to_dict(m) for m in state.current_chat_history],
        "settings": state.settings.to_dict(),
        "turns": state.turns,
        "last_resize_turn": state.last_resize_turn,
        "memo_cursor": state.memo_cursor,
        **({"memo_ahead": sorted(state.memo_ahead)} if state.memo_ahead else {}),
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
        return json.loads(text)
    except json.JSONDecodeError as error:
        raise DocumentError(f"the session document is not valid JSON: {error}.") from error


def parse_yaml(text: str) -> Any:
    """Parse YAML text safely, naming the position of a syntax error."""
    if not isinstance(text, str | bytes):
        raise DocumentTypeError(f"load_yaml expects YAML text, got {type(text).__name__}.")
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as error:
        raise DocumentError(f"the session document is not valid YAML: {error}.") from error


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
    session_id = data.get("id", keep_id)
    if not isinstance(session_id, str) or not session_id:
        raise DocumentError(f"'id' must be a non-empty string, got {session_id!r}.")
    memo = data.get("memo", {})
    if not isinstance(memo, dict):
        raise DocumentError(f"'memo' must be a dict, got {type(memo).__name__}.")
    full = _messages(data.get("full_chat_history", []), "full_chat_history")
    current = _messages(data.get("current_chat_history", []), "current_chat_history")
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
    return SessionState(
        id=session_id,
        full_chat_history=full,
        current_chat_history=current,
        memo=memo,
        settings=settings,
        memo_ahead=frozenset(data.get("memo_ahead") or ()),
        **counters,
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
        except Exception as error:  # langchain raises ValueError/KeyError/ValidationError
            raise DocumentError(f"{key}[{index}] is not a valid {item['type']!r} message: {error}") from error
        messages.append(message)
    return messages


class SessionExport:
    """The export and import methods of ``Session`` (the spec's names), kept beside the format."""

    _state: SessionState
    _install: Callable[[SessionState], None]
    id: str

    def to_dict(self) -> dict[str, Any]:
        """The session as a plain dict (what to_json and to_yaml write)."""
        return dump_state(self._state)

    def to_json(self) -> str:
        return to_json(self.to_dict())

    def to_yaml(self) -> str:
        return to_yaml(self.to_dict())

    def load_json(self, value: str) -> Self:
        """Replace this session's state with a JSON document; nothing changes on error."""
        return self.load_dict(parse_json(value))

    def load_yaml(self, value: str) -> Self:
        """Replace this session's state with a YAML document; nothing changes on error."""
        return self.load_dict(parse_yaml(value))

    def load_dict(self, data: Any) -> Self:
        """Replace this session's state with a parsed document; nothing changes on error."""
        self._install(load_state(data, keep_id=self.id))
        return self

    @classmethod
    def from_json(cls, value: str, **kwargs: Any) -> Self:
        """A new session from a JSON document (handlers and model as keyword arguments)."""
        return cls(**kwargs).load_json(value)

    @classmethod
    def from_yaml(cls, value: str, **kwargs: Any) -> Self:
        """A new session from a YAML document (handlers and model as keyword arguments)."""
        return cls(**kwargs).load_yaml(value)

