"""Reading a stored session's export back: ``manager.export(key, "json" | "yaml")`` (and
``session-graph sessions export KEY --format json``) writes ``{"key", "state", "messages"}``:
the store's own state document and message records. This module turns such a document into
a session again, for ``Session.from_json``/``from_yaml`` (registered as a document reader in
``session_graph.interop.export``) and for ``SessionManager.import_document`` (``sessions import``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from session_graph.errors import DocumentError, StoreError
from session_graph.interop.export import dump_state, parse_json, parse_yaml, register_reader
from session_graph.resize.state import SessionState
from session_graph.resize.trace import ResizeTrace, saved_trace
from session_graph.stores.base import Snapshot
from session_graph.stores.codec import snapshot_state

__all__ = ["StoreExport", "is_store_export", "parse_document", "read_store_export", "session_document"]

_EXPORT_KEYS = frozenset({"key", "state", "messages"})


class StoreExport:
    """A store export read back: the session's state, metadata, arrival times and trace."""

    __slots__ = ("arrived_at", "key", "metadata", "state", "trace")

    def __init__(self, key: str, state: SessionState, metadata: dict[str, Any], arrived_at: dict[str, str],
                 trace: ResizeTrace) -> None:
        self.key = key
        self.state = state
        self.metadata = metadata
        self.arrived_at = arrived_at
        self.trace = trace


def is_store_export(data: Any) -> bool:
    """Whether ``data`` has the shape of a store export (``key``, ``state``, ``messages``)."""
    return isinstance(data, Mapping) and set(data) == _EXPORT_KEYS


def parse_document(text: str) -> Any:
    """A JSON or YAML document (JSON when it starts with ``{``), parsed with the session loaders' bounds."""
    if isinstance(text, bytes | bytearray):
        text = bytes(text).decode("utf-8", "replace")
    if not isinstance(text, str):
        raise DocumentError(f"a session document must be JSON or YAML text, got {type(text).__name__}.")
    return parse_json(text) if text.lstrip().startswith("{") else parse_yaml(text)


def read_store_export(data: Mapping[str, Any]) -> StoreExport:
    """The session a store export describes.

    Raises:
        DocumentError: not a store export, or a record or its state document is damaged (naming which).
    """
    key, state, records = data.get("key"), data.get("state"), data.get("messages")
    if not isinstance(key, str) or not key or not isinstance(state, Mapping) or not isinstance(records, list) \
            or not all(isinstance(r, Mapping) for r in records):
        raise DocumentError("a session export must be {'key': str, 'state': {...}, 'messages': [records]}, "
                            "as `session-graph sessions export KEY --format json` writes it.")
    where = f"exported session {key!r}"
    try:
        built, metadata = snapshot_state(Snapshot(key, dict(state), [dict(r) for r in records], 0), where)
        trace = saved_trace(state, where)
    except StoreError as error:
        raise DocumentError(str(error)) from None
    arrived = {str(r.get("id") or ""): str(r.get("ts") or "") for r in records}
    return StoreExport(key, built, metadata, arrived, trace)


def session_document(data: Any) -> dict[str, Any] | None:
    """``data`` as a ``Session.to_dict()`` document when it is a store export, else None."""
    if not is_store_export(data):
        return None
    read = read_store_export(data)
    document = dump_state(read.state)
    if len(read.trace):
        document["trace"] = read.trace.dump()
    return document


register_reader(session_document)
