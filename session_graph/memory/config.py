"""MemoryConfig: where long-term memories live and whose they are.

The wiring (objects) lives here; the numbers (how many hits, budgets, the profile's bound)
are settings under ``session.memory`` so they travel with a session and its exports.
"""

from __future__ import annotations

from dataclasses import dataclass, field
import os
from typing import Any

from langchain_core.runnables import Runnable
from langgraph.store.base import BaseStore

from session_graph.errors import ConfigurationError, StoreUnavailableError
from session_graph.llm.names import chat_model
from session_graph.memory.filestore import FileMemoryStore

__all__ = ["MemoryConfig", "unavailable"]

_CONNECTION_ERRORS = ("OperationalError", "InterfaceError", "PoolTimeout", "PoolClosed", "TooManyRequests")


def unavailable(error: BaseException) -> StoreUnavailableError | None:
    """A clear, retryable error for a memory store whose database connection failed (psycopg's
    ``OperationalError`` and the like, anywhere in the chain of causes), else None."""
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        kind = type(current)
        if kind.__module__.startswith("psycopg") and any(c.__name__ in _CONNECTION_ERRORS for c in kind.__mro__):
            return StoreUnavailableError(
                f"the memory store's database connection failed ({kind.__name__}: {str(current).strip()[:200]}). Nothing "
                "was lost: a commit's archive stays pending and the next commit() resumes it once the database is back. "
                "A LangGraph PostgresStore on one psycopg connection never reconnects after a drop; build it on a pool "
                "that checks connections: PostgresStore(ConnectionPool(dsn, kwargs={'autocommit': True, "
                "'prepare_threshold': 0, 'row_factory': dict_row}, check=ConnectionPool.check_connection))."
            )
        current = current.__cause__ or current.__context__
    return None


def _check_owner(value: Any, what: str) -> str:
    if not isinstance(value, str) or not value or "." in value or "/" in value or "\x00" in value:
        raise ConfigurationError(
            f"MemoryConfig {what} must be a non-empty string without '.', '/' or NUL (it names a store "
            f"namespace and a directory), got {value!r}."
        )
    return value


@dataclass(frozen=True)
class MemoryConfig:
    """Long-term memory for sessions: a store, the user and agent they belong to.

    Args:
        store: any LangGraph ``BaseStore`` (``InMemoryStore``, ``SqliteStore``, ``PostgresStore``);
            None: a ``FileMemoryStore`` at ``path`` in OpenViking's layout, made on first use.
            Give a ``PostgresStore`` a ``psycopg_pool.ConnectionPool`` with
            ``check=ConnectionPool.check_connection``, not one connection: a single connection
            never reconnects after a drop (a commit then raises ``StoreUnavailableError``,
            retryable, until the store is rebuilt); a pool replaces a dropped connection.
        user: the user id memories of profile, preferences, entities and events belong to.
        agent: the agent id cases and patterns belong to.
        embeddings: a LangChain ``Embeddings`` for the prefilter (fused with BM25); None: BM25 only.
        path: the root of the default file store.
        model: a chat model for commits, or a name init_chat_model accepts ("openai:gpt-4o-mini");
            None: the session's own model.
    """

    store: BaseStore | None = None
    user: str = "default"
    agent: str = "default"
    embeddings: Any = None
    path: str | os.PathLike[str] = ".session_graph/memory"
    model: Runnable | str | None = None
    _made: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.store is not None and not isinstance(self.store, BaseStore):
            raise ConfigurationError(
                f"MemoryConfig store must be a LangGraph BaseStore (InMemoryStore, SqliteStore, PostgresStore, "
                f"FileMemoryStore) or None, got {type(self.store).__name__}."
            )
        _check_owner(self.user, "user")
        _check_owner(self.agent, "agent")
        if self.embeddings is not None and not callable(getattr(self.embeddings, "embed_documents", None)):
            raise ConfigurationError(
                f"MemoryConfig embeddings must be a LangChain Embeddings (with embed_documents), "
                f"got {type(self.embeddings).__name__}."
            )
        if self.model is not None:
            object.__setattr__(self, "model", chat_model(self.model, "MemoryConfig model"))  # a name becomes its model

    @property
    def memory_store(self) -> BaseStore:
        """The store in use (the default file store is made once, on first use)."""
        if self.store is not None:
            return self.store
        if "store" not in self._made:
            self._made["store"] = FileMemoryStore(self.path)
        return self._made["store"]
