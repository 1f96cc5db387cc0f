"""``Session``'s documents and history in other shapes: ``to_dict``, ``to_json``, ``to_yaml``,
``load_dict``, ``load_json``, ``load_yaml`` and ``get_history``.

Each is a function whose first parameter is the session, typed by ``ExportedSession`` (what they
use of it; nothing here imports the facade), and ``Session`` takes it as its method by name
(``to_json = session_export.to_json``): the docstring and signature live here, once. The document
format is ``export.py``'s; nanobot's history is ``nanobot.py``'s.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol, TypeVar

from langchain_core.messages import BaseMessage

from session_graph.interop import export
from session_graph.interop.nanobot import session_history
from session_graph.resize.state import SessionState
from session_graph.resize.trace import ResizeTrace
from session_graph.resize.view import recent_history

__all__ = ["ExportedSession", "get_history", "load_dict", "load_json", "load_yaml", "to_dict", "to_json", "to_yaml"]


class ExportedSession(Protocol):
    """What export and import use of a ``Session``: its id, state, trace, arrival times and
    metadata, and ``restore`` (adopt a whole state)."""

    metadata: dict[str, Any]

    @property
    def arrived_at(self) -> Mapping[str, str]: ...

    @property
    def id(self) -> str: ...

    @property
    def state(self) -> SessionState: ...

    @property
    def trace(self) -> ResizeTrace: ...

    def restore(self, state: SessionState) -> object: ...


SessionT = TypeVar("SessionT", bound=ExportedSession)


def to_dict(self: ExportedSession) -> dict[str, Any]:
    """The session as a plain dict (what to_json and to_yaml write)."""
    return export.session_document(self.state, self.trace)


def to_json(self: ExportedSession) -> str:
    """The session as JSON text (``to_dict()``, ASCII-safe); ``Session.from_json`` loads it back."""
    return export.to_json(to_dict(self))


def to_yaml(self: ExportedSession) -> str:
    """The session as YAML text (``to_dict()``); ``Session.from_yaml`` loads it back."""
    return export.to_yaml(to_dict(self))


def load_json(self: SessionT, value: str) -> SessionT:
    """Replace this session's state with a JSON document; nothing changes on error."""
    return load_dict(self, export.parse_json(value))


def load_yaml(self: SessionT, value: str) -> SessionT:
    """Replace this session's state with a YAML document; nothing changes on error."""
    return load_dict(self, export.parse_yaml(value))


def load_dict(self: SessionT, data: Any) -> SessionT:
    """Replace this session's state with a parsed document; nothing changes on error."""
    state, trace = export.read_document(data, keep_id=self.id)
    self.restore(state)
    self.trace.replace(trace)
    return self


def get_history(self: ExportedSession, max_messages: int | None = None, *, compat: str | None = None) -> list[dict[str, Any]]:
    """The newest window messages as OpenAI-style dicts for an LLM (tool fields kept).

    At most ``max_messages`` (default 50), opening on a user turn when the slice holds one,
    cut so that no tool result loses its call; a tool call with no result is answered by a
    synthetic "cancelled" result (as in ``view()``); ``reasoning_content`` is kept.

    With ``compat="nanobot"`` (or ``"nanobot-0.1"``, ``"-0.2"``, ``"-0.3"``): exactly what
    nanobot's own ``get_history(max_messages)`` returns for this session's records (the
    version the session was imported from, else 0.3.x; ``max_messages`` None for that
    version's default), from nanobot's archive watermark on (see
    :mod:`session_graph.interop.nanobot`).
    """
    state = self.state
    if compat is not None:
        meta = self.metadata.get("nanobot")
        history: list[BaseMessage] = state.full_chat_history
        return session_history(history, self.arrived_at, meta if isinstance(meta, dict) else {}, max_messages, compat)
    return recent_history(state.current_chat_history, 50 if max_messages is None else max_messages)
