"""``Session``'s search methods: ``search`` and its async twin ``asearch``.

Each is a function whose first parameter is the session, typed by ``SearchedSession`` (what they
read of it; retrieval sits far below the facade), and ``Session`` takes it as its method by name
(``search = session_search.search``): the docstring and signature live here, once. The search
itself is ``messages.py``'s.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from langchain_core.messages import BaseMessage

from session_graph.errors import ConfigurationError
from session_graph.retrieval.messages import session_search, substring_search
from session_graph.retrieval.search import make_options

__all__ = ["SearchedSession", "asearch", "search"]


class SearchedSession(Protocol):
    """What search reads of a ``Session``: its id, its whole history and the messages' arrival times."""

    @property
    def arrived_at(self) -> Mapping[str, str]: ...

    @property
    def id(self) -> str: ...

    @property
    def full_chat_history(self) -> Sequence[BaseMessage]: ...


def search(self: SearchedSession, query: str, k: int = 10, *, mode: str = "ranked", options: Any = None,
           **settings: Any) -> list[Any]:
    """The ``k`` messages of the whole history (window, evicted, archived) that best match ``query``.

    Ranked by BM25 over stemmed, CJK-aware terms (``session_graph.retrieval``); a session a
    ``SessionManager`` loaded lazily asks the store's index for the part still in the store
    instead of reading it. ``mode="substring"``: the messages containing ``query``
    (case-insensitive), oldest first. ``settings`` (``around``, ``since``, ``until``,
    ``dense``, ``reranker``...) or ``options`` are a ``retrieval.search.SearchOptions``.
    Returns ``SearchHit``s (``key`` is the session id, ``seq`` the position in the history).
    """
    if mode == "substring":
        return substring_search(self, query, k)
    if mode != "ranked":
        raise ConfigurationError(f"mode must be 'ranked' or 'substring', got {mode!r}.")
    return session_search(self, query, k, make_options(options, settings))


async def asearch(self: SearchedSession, query: str, k: int = 10, *, mode: str = "ranked", options: Any = None,
                  **settings: Any) -> list[Any]:
    """Async twin of ``search`` (run in a worker thread: a long history or a store's index
    never holds the event loop)."""
    return await asyncio.to_thread(search, self, query, k, mode=mode, options=options, **settings)
