"""The agent's long-term memory tools: ``search_memory``, ``remember`` and ``forget_memory``.

Each works for the user and agent of the run that calls it (``MemoryConfig.for_run``: the
run's ``config["configurable"]`` or runtime context, else the config's own), so one agent
serves many users and a tool call never reaches another user's memories:

- ``search_memory``: the best matches, one a line, each with its ``memory://`` URI (what
  ``forget_memory`` takes) and where it came from (session, archive, messages);
- ``remember``: one fact, through the commit's de-duplicating prefilter, decision and
  compare-and-set apply (``memory.recall.remember``; async: ``aremember``);
- ``forget_memory``: delete one memory, named by its URI or by its key (with its category when
  two categories hold that key), through ``memory.manage.forget``: its past versions are kept,
  unless the developer enables ``purge`` (``memory_tools(memory, allow_purge=True)``), when the
  tool takes ``purge=true`` to remove every version. A URI of another user or agent is refused,
  whatever the model sends; so are the agent's own memories (cases, patterns), which every user
  of the agent shares, unless the developer enables that (``allow_agent_forget=True``).

Each tool has a sync and an async body; the async ones run the store's work off the event loop.
A refused argument is the tool's answer (``Not forgotten: ...``), so the model can correct itself;
so is a memory store that is down ("unavailable right now", in each tool: the agent's turn goes
on, nothing is written); a real data error of the store is our ``StoreError``.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from typing import Annotated

from langchain_core.tools import BaseTool, StructuredTool
from pydantic import BeforeValidator

from session_graph.errors import ConfigurationError
from session_graph.memory.categories import CATEGORIES, parse_uri
from session_graph.memory.config import MemoryConfig
from session_graph.memory.items import clean_terms
from session_graph.memory.manage import forget
from session_graph.memory.recall import aremember, format_memories, recall_or_outage, remember, store_outage

Terms = Annotated[list[str] | None, BeforeValidator(lambda raw: clean_terms(raw) or None)]
"""The remember tool's ``terms``: a list of strings in its schema, and whatever shape a model sends
(a mapping, a number, nested lists) cleaned as ``remember(..., terms=)`` cleans it, never refused."""

__all__ = ["memory_tools"]

log = logging.getLogger(__name__)


def memory_tools(memory: MemoryConfig, *, allow_purge: bool = False, allow_agent_forget: bool = False) -> list[BaseTool]:
    """``search_memory``, ``remember`` and ``forget_memory`` over ``memory`` (what
    ``SessionMiddleware(memory=...)`` offers); ``allow_purge``: ``forget_memory`` may also remove
    an item's past versions when the model asks (off: history always kept); ``allow_agent_forget``:
    it may forget the agent's own memories (cases, patterns), which all its users share (off: only
    the run's user's memories)."""

    def search_memory(query: str, k: int = 5) -> str:
        """Search the user's and the agent's long-term memories; returns the best matches, one per line,
        each with its memory:// URI (to forget it) and where it came from (session, archive, messages)."""
        found, outage = recall_or_outage(memory.for_run(), query, max(1, min(int(k), 20)))
        if outage is not None:
            return f"Memory search is unavailable right now; answer without it. ({outage})"
        return format_memories(found, citations=True, uris=True) or "No memory matches."

    async def asearch_memory(query: str, k: int = 5) -> str:
        return await asyncio.to_thread(search_memory, query, k)  # context (the run's config) goes along

    def remember_fact(content: str, category: str = "preferences", key: str | None = None,
                      terms: Terms = None) -> str:
        """Store a lasting fact about the user (profile, preferences, entities, events) or about how the
        agent works (cases, patterns). ``key`` names the topic a later fact on it should update; ``terms``:
        a few other words a later search may use for it (other names, synonyms, the broader term, translations)."""
        try:
            return f"{remember(memory.for_run(), content, category, key, source='tool', terms=terms)}: {content}"
        except Exception as error:
            return _refused("Not stored", "remembering", error)

    async def aremember_fact(content: str, category: str = "preferences", key: str | None = None,
                             terms: Terms = None) -> str:
        try:
            return f"{await aremember(memory.for_run(), content, category, key, source='tool', terms=terms)}: {content}"
        except Exception as error:
            return _refused("Not stored", "remembering", error)

    def forget_one(memory_id: str, category: str | None = None, purge: bool = False) -> str:
        try:
            return _forget(memory.for_run(), memory_id, category, purge and allow_purge, allow_agent_forget)
        except Exception as error:
            return _refused("Not forgotten", "forgetting", error)

    async def aforget_one(memory_id: str, category: str | None = None, purge: bool = False) -> str:
        return await asyncio.to_thread(forget_one, memory_id, category, purge)

    forget_doc = ("Forget one long-term memory the user wants gone or that is wrong: give its memory:// URI as "
                  "search_memory shows it (or its key, with its category if several hold that key).")
    if allow_purge:
        forget_doc += " purge=true also erases its past versions (only when the user asks for that)."

        def forget_memory(memory_id: str, category: str | None = None, purge: bool = False) -> str:
            return forget_one(memory_id, category, purge)

        async def aforget_memory(memory_id: str, category: str | None = None, purge: bool = False) -> str:
            return await aforget_one(memory_id, category, purge)
    else:

        def forget_memory(memory_id: str, category: str | None = None) -> str:  # type: ignore[misc]
            return forget_one(memory_id, category)

        async def aforget_memory(memory_id: str, category: str | None = None) -> str:  # type: ignore[misc]
            return await aforget_one(memory_id, category)

    return [
        StructuredTool.from_function(search_memory, coroutine=asearch_memory, name="search_memory"),
        StructuredTool.from_function(remember_fact, coroutine=aremember_fact, name="remember"),
        StructuredTool.from_function(forget_memory, coroutine=aforget_memory, name="forget_memory", description=forget_doc),
    ]


def _refused(answer: str, doing: str, error: Exception) -> str:
    """The tool's answer to ``error``: a refused argument or a store that is down, told to the
    model; anything else raised (a real data error as ``StoreError``)."""
    if isinstance(error, ConfigurationError):
        return f"{answer}: {error}"
    down = store_outage(error, f"{doing} in the memory store")  # raises what is not an outage
    log.warning("%s skipped, the memory store is unavailable: %s", doing, down)
    return f"{answer}: the memory store is unavailable right now; try again later. ({down})"


def _forget(memory: MemoryConfig, memory_id: str, category: str | None, purge: bool, agent_too: bool = False) -> str:
    """Forget ``memory_id`` (a URI, or a key found in ``category`` or in exactly one category) in
    ``memory``'s own namespaces (the agent's too when ``agent_too``); the tool's answer."""
    memory_id = str(memory_id).strip()
    if len(memory_id) > 1 and memory_id[0] == memory_id[-1] == '"':  # as search_memory shows a URI that is not one token
        with contextlib.suppress(ValueError):
            memory_id = str(json.loads(memory_id))
    allowed = [c for c in CATEGORIES if agent_too or CATEGORIES[c].owner == "user"]
    parsed = parse_uri(memory_id)
    shared = parsed[0][3] if parsed is not None else category
    if shared in CATEGORIES and shared not in allowed:
        return (f"Not forgotten: {shared} memories belong to the agent and are shared by all its users; "
                "only the developer can forget them.")
    if parsed is None and category is None:
        holding = [c for c in allowed if memory.memory_store.get(memory.namespace(c), memory_id) is not None]
        if len(holding) > 1:
            return (f"Not forgotten: {len(holding)} categories hold a memory keyed {memory_id!r} "
                    f"({', '.join(holding)}); give its memory:// URI or a category.")
        if not holding:
            return f"No memory keyed {memory_id!r}; search_memory shows each memory's URI."
        category = holding[0]
    if category is not None and category not in CATEGORIES:
        return f"Not forgotten: unknown category {category!r}; the categories are {', '.join(CATEGORIES)}."
    if not forget(memory, memory_id, category, purge=purge):
        return f"No memory at {memory_id!r}; search_memory shows each memory's URI."
    return f"Forgotten{' (every version erased)' if purge else ' (its history is kept)'}: {memory_id}"

