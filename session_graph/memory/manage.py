"""What a user can do with their memories: list, export, see an item's versions, forget, expire.

Every function takes a ``MemoryConfig`` and works in the namespaces it derives
(``MemoryConfig.namespace``): a URI naming another user's or agent's memory is refused, never
followed. Writes happen under the owner's lock and go through the namespace's change feed, so
prefilter indexes in every process see them.

- ``list_memories``: the active items (optionally superseded ones too), each with its URI.
- ``memory_history``: an item's versions, oldest first, ending with the stored one.
- ``forget``: delete an item; its past versions are kept (and the deleted text added to them)
  unless ``purge=True``, which removes every version.
- ``expire``: forget the events whose ``expires_at`` has passed (``MemoryConfig.event_ttl``
  sets it when an event is written); expired events are never hits or recalled meanwhile.
- ``export_memories``: every item as JSON, or written in OpenViking's layout (the file
  store's: ``user/<id>/memories/<category>/<key>.md``) under a directory.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
import re
from typing import Any, Literal

from session_graph._base.ids import utc_now
from session_graph.errors import ConfigurationError
from session_graph.memory.apply import owner_lock
from session_graph.memory.categories import CATEGORIES, history_namespace, memory_uri, parse_uri
from session_graph.memory.changes import bump
from session_graph.memory.config import MemoryConfig
from session_graph.memory.filestore import FileMemoryStore
from session_graph.memory.items import expired

__all__ = ["expire", "expired", "export_memories", "forget", "list_memories", "memory_history"]

_LIMIT = 1_000_000


def _place(memory: MemoryConfig, item: str, category: str | None) -> tuple[tuple[str, ...], str]:
    """The (namespace, key) of ``item`` (a ``memory://`` URI, or a key with its ``category``), in
    this config's own namespaces only."""
    parsed = parse_uri(item)
    if parsed is not None:
        namespace, key = parsed
        if namespace != memory.namespace(namespace[3]):
            raise ConfigurationError(f"{item!r} names another owner's memory; this config is user {memory.user!r}, "
                                     f"agent {memory.agent!r}. Use memory.for_user(...) for that owner.")
        return namespace, key
    if category not in CATEGORIES:
        raise ConfigurationError(f"give a memory:// URI, or a key with category= one of {', '.join(CATEGORIES)}; "
                                 f"got {item!r} with category {category!r}.")
    return memory.namespace(category), item


def list_memories(memory: MemoryConfig, categories: list[str] | None = None, *,
                  include_superseded: bool = False) -> list[dict[str, Any]]:
    """The user's and the agent's memories (active ones; ``include_superseded`` adds the rest), by category and key."""
    return [value for _, _, value in _items(memory, categories, include_superseded)]


def _items(memory: MemoryConfig, categories: list[str] | None, include_superseded: bool = False,
           ) -> list[tuple[tuple[str, ...], str, dict[str, Any]]]:
    """(namespace, key, value) of each memory: the place derived from the config and the store's
    key, never the ``uri`` or ``key`` a stored value claims."""
    unknown = [c for c in categories or () if c not in CATEGORIES]
    if unknown:
        raise ConfigurationError(f"unknown memory categories {unknown}; the categories are {', '.join(CATEGORIES)}.")
    out = []
    for category in categories or list(CATEGORIES):
        namespace = memory.namespace(category)
        found = memory.memory_store.search(namespace, filter=None if include_superseded else {"status": "active"}, limit=_LIMIT)
        out.extend((namespace, item.key, dict(item.value)) for item in sorted(found, key=lambda i: i.key)
                   if tuple(item.namespace) == namespace)
    return out


def memory_history(memory: MemoryConfig, item: str, category: str | None = None) -> list[dict[str, Any]]:
    """Every version of an item, oldest first: those kept in its history, then the stored one."""
    namespace, key = _place(memory, item, category)
    pattern = re.compile(re.escape(key) + r"@v(\d+)$")
    versions = []
    for old in memory.memory_store.search(history_namespace(namespace), limit=_LIMIT):
        found = pattern.match(old.key)
        if found and old.namespace == history_namespace(namespace):
            versions.append((int(found.group(1)), dict(old.value)))
    versions.sort(key=lambda pair: pair[0])
    current = memory.memory_store.get(namespace, key)
    return [value for _, value in versions] + ([dict(current.value)] if current is not None else [])


def forget(memory: MemoryConfig, item: str, category: str | None = None, *, purge: bool = False) -> bool:
    """Delete an item (a ``memory://`` URI, or a key with its category); False if there was none.

    ``purge=False`` keeps its past versions and adds the deleted one to them (marked
    ``forgotten``); ``purge=True`` removes every version too.
    """
    namespace, key = _place(memory, item, category)
    store = memory.memory_store
    with owner_lock(store, (namespace[0], namespace[1])):
        current = store.get(namespace, key)
        if purge:
            pattern = re.compile(re.escape(key) + r"@v\d+(-overflow)?$")
            for old in store.search(history_namespace(namespace), limit=_LIMIT):
                if pattern.match(old.key):
                    store.delete(history_namespace(namespace), old.key)
        elif current is not None:
            value = {**current.value, "status": "forgotten", "forgotten_at": utc_now()}
            store.put(history_namespace(namespace), f"{key}@v{current.value.get('version', 1)}", value, index=False)
        if current is None:
            return False
        store.delete(namespace, key)
        bump(store, namespace, key)
    return True


def expire(memory: MemoryConfig, now: str | None = None, *, purge: bool = False) -> list[str]:
    """Forget the events whose ``expires_at`` has passed; their URIs."""
    gone = []
    for namespace, key, value in _items(memory, ["events"]):
        if expired(value, now):
            forget(memory, key, "events", purge=purge)
            gone.append(memory_uri(namespace, key))
    return gone


def export_memories(memory: MemoryConfig, path: str | os.PathLike[str] | None = None, *,
                    format: Literal["json", "openviking"] = "json", include_superseded: bool = False) -> Any:
    """The user's and agent's memories: ``format="json"`` returns them as a JSON-ready list (and
    writes it to ``path`` when given); ``"openviking"`` writes them in OpenViking's layout under
    ``path`` (as the file store keeps them) and returns the directory.
    """
    items = _items(memory, None, include_superseded)
    values = [value for _, _, value in items]
    if format == "json":
        if path is not None:
            Path(path).write_text(json.dumps(values, ensure_ascii=False, indent=1), encoding="utf-8")
        return values
    if format != "openviking" or path is None:
        raise ConfigurationError(f"export_memories: format must be 'json' or 'openviking' (with a path), got {format!r}"
                                 + ("" if path is not None else " without a path") + ".")
    target = FileMemoryStore(path)
    for namespace, key, value in items:  # where the item is, not where its value says it is
        target.put(namespace, key, value, index=False)
    return Path(path)
