"""The session's running accounting: message positions, sizes and window totals.

Everything here is derived from the state and rebuilt from it after a resize or a load;
per message it costs O(size of the message), never O(history).
"""

from __future__ import annotations

from langchain_core.messages import BaseMessage

from session_graph.errors import MessageError
from session_graph.messages import role_of
from session_graph.sizing import SizeCache
from session_graph.state import SessionState
from session_graph.window import WindowTotals

__all__ = ["Ledger"]


class Ledger:
    """Positions of messages in the full history, their sizes, and the window totals."""

    __slots__ = ("_index", "size", "totals")

    def __init__(self, state: SessionState) -> None:
        self._index: dict[str, int] = {}
        self.size = SizeCache()
        self.totals = WindowTotals()
        self.rebuild(state, reindex=True)

    def index_of(self, message: BaseMessage) -> int | None:
        """Where a message sits in the full history, or None if it is not there."""
        return self._index.get(message.id or "")

    def check_new(self, message: BaseMessage, session_id: str) -> None:
        """Refuse a message whose id is already in the history."""
        if message.id in self._index:
            raise MessageError(
                f"a message with id {message.id!r} is already in session {session_id}; "
                "append each message once (give a copy a new id to repeat it)."
            )

    def add(self, message: BaseMessage, position: int) -> str:
        """Account for one appended message; returns its role."""
        role = role_of(message)
        size = self.size(message)
        self._index[message.id or ""] = position
        self.totals = self.totals.add(role, size)
        return role

    def rebuild(self, state: SessionState, *, reindex: bool) -> None:
        """Recompute the window totals (and, if the full history was replaced, the index)."""
        if reindex:
            self._index = {m.id: i for i, m in enumerate(state.full_chat_history) if m.id}
            self.size = SizeCache()
        window = state.current_chat_history
        self.totals = WindowTotals.of([role_of(m) for m in window], [self.size(m) for m in window])
