"""Which session an agent run uses, and how the agent's messages flow into it.

One fixed ``Session``, or one session per LangGraph ``thread_id`` from a ``SessionManager``
(so two users never see each other's history, and a restarted process resumes each
thread from the store).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from langchain_core.messages import BaseMessage
from langchain_core.runnables import RunnableConfig
from langgraph.config import get_config

from session_graph.errors import ConfigurationError
from session_graph.session import Session
from session_graph.stores.manager import SessionManager

__all__ = ["SessionBinding"]


class SessionBinding:
    """A fixed session, or sessions by thread from a manager.

    Args:
        session: the one session every run uses.
        manager: where per-thread sessions live (``thread_id`` -> key ``key_prefix + thread_id``).
        key_prefix: prepended to the thread id to make the session key.
    """

    def __init__(self, session: Session | None = None, *, manager: SessionManager | None = None, key_prefix: str = "") -> None:
        if (session is None) == (manager is None):
            raise ConfigurationError("give either a session or a SessionManager (for one session per thread_id), not both.")
        if session is not None and not isinstance(session, Session):
            raise ConfigurationError(f"session must be a session_graph Session, got {type(session).__name__}.")
        self.fixed = session
        self.manager = manager
        self.key_prefix = key_prefix

    def key(self, config: RunnableConfig | None = None) -> str:
        """The session key of this run."""
        if self.fixed is not None:
            return self.fixed.id
        config = config if config is not None else get_config()
        thread = (config.get("configurable") or {}).get("thread_id")
        if thread is None:
            raise ConfigurationError(
                "sessions by thread need a thread id: invoke with config={'configurable': {'thread_id': '...'}}."
            )
        return f"{self.key_prefix}{thread}"

    def session(self, config: RunnableConfig | None = None) -> Session:
        """The session of this run (loaded from the manager's store when needed)."""
        if self.fixed is not None:
            return self.fixed
        assert self.manager is not None
        return self.manager.get_or_create(self.key(config))

    @staticmethod
    def record(session: Session, messages: Sequence[Any]) -> int:
        """Append the messages the session does not hold yet (by id); returns how many."""
        added = 0
        for message in messages:
            if isinstance(message, BaseMessage) and message.id and message in session:
                continue
            session.append_message(message)
            added += 1
        return added

    def save(self, session: Session) -> None:
        """Persist the session when it lives in a manager's store."""
        if self.manager is not None:
            self.manager.save(session)
