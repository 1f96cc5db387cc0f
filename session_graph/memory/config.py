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

from session_graph.errors import ConfigurationError
from session_graph.models import chat_model

__all__ = ["MemoryConfig"]


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
            from session_graph.memory.filestore import FileMemoryStore

            self._made["store"] = FileMemoryStore(self.path)
        return self._made["store"]
