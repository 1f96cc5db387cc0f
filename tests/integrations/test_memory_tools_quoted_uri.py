"""``search_memory`` quotes a memory's URI when it is not one plain token (an id with a space, a
quote or a bracket: the id is any text); ``forget_memory`` is told to take the URI "as
search_memory shows it", so it must take the quoted form back, sync and async."""

from __future__ import annotations

import asyncio

from langgraph.store.memory import InMemoryStore
import pytest

from session_graph.integrations.memory_tools import memory_tools
from session_graph.memory import MemoryConfig
from session_graph.memory.recall import recall


@pytest.mark.parametrize("user", ["John Smith", 'ann "the admin"', "bob [ops]"])
@pytest.mark.parametrize("run_async", [False, True])
def test_forget_memory_takes_the_uri_exactly_as_search_memory_shows_it(user: str, run_async: bool) -> None:
    memory = MemoryConfig(store=InMemoryStore(), user=user, agent="coder")
    search, remember, forget = memory_tools(memory)
    remember.invoke({"content": "The user prefers a dark editor theme.", "key": "editor theme"})
    shown = search.invoke({"query": "dark editor theme"})
    uri = shown[2 : shown.index(" [preferences]")]  # "- <uri> [category] ...": the URI as the agent reads it
    assert uri.startswith('"memory://')  # quoted: not one plain token
    answer = asyncio.run(forget.ainvoke({"memory_id": uri})) if run_async else forget.invoke({"memory_id": uri})
    assert answer.startswith("Forgotten"), answer
    assert recall(memory, "dark editor theme", 3) == []
