"""Which owner an item was written for: the marker every new item carries, and the guard on
labels an older version could have written for someone else.

Before owner labels were encoded (``categories.encode_label``), a user id was stored as itself;
now a tenant's user is ``enc(tenant)~enc(id)`` and ``.``, ``/``, ``~``, NUL and ``%XX`` are
escaped. So a label holding ``~`` or a ``%XX`` is *ambiguous*: old memories of user ``a~b`` sit at
the label tenant ``a``'s user ``b`` has now, old user ``bob%2Ecom``'s at new user ``bob.com``'s.
Every item written now carries ``owner_id`` (``{"tenant", "id"}``: the owner's encoded parts,
``items.new_value`` and ``migrate``'s rewrite), so an item without it in an ambiguous namespace
may be another owner's. :func:`check_owned` (called by ``MemoryConfig.namespace``, the one
derivation every reader and writer uses) scans such a namespace once per process and store and
refuses it while it holds unmarked items. An unambiguous label (nearly all ids) costs two
substring tests.
"""

from __future__ import annotations

import re
import shlex
import threading
from typing import Any
import weakref

from langgraph.store.base import BaseStore

from session_graph.errors import ConfigurationError
from session_graph.memory.categories import owner_of_label

__all__ = ["MARK", "ambiguous", "check_owned", "owner_mark", "unmarked"]

MARK = "owner_id"
_ESCAPED = re.compile(r"%[0-9A-Fa-f]{2}")
_PAGE = 1000
_checked: weakref.WeakKeyDictionary[Any, set[tuple[str, ...]]] = weakref.WeakKeyDictionary()
_lock = threading.Lock()


def owner_mark(namespace: tuple[str, ...]) -> dict[str, str | None]:
    """The marker of an item at ``namespace``: its owner's tenant (or None) and id, each as the
    label encodes it (``categories.encode_label``: reversible, and never a NUL, which Postgres's
    ``jsonb`` refuses; an id may hold one)."""
    tenant, _, owner = namespace[1].rpartition("~")  # encoded parts never hold a raw "~"
    return {"tenant": tenant or None, "id": owner}


def ambiguous(label: str) -> bool:
    """Whether an older version could have written ``label`` for another owner (``~`` or ``%XX``)."""
    return "~" in label or ("%" in label and _ESCAPED.search(label) is not None)


def unmarked(store: BaseStore, namespace: tuple[str, ...], limit: int | None = None) -> list[str]:
    """Keys of the items in exactly ``namespace`` without the marker (at most ``limit``)."""
    keys: list[str] = []
    offset = 0
    while True:
        page = store.search(namespace, limit=_PAGE, offset=offset)
        keys += [item.key for item in page if tuple(item.namespace) == namespace and MARK not in (item.value or {})]
        if len(page) < _PAGE or (limit is not None and len(keys) >= limit):
            return keys[:limit]
        offset += len(page)


def _move_hint(namespace: tuple[str, ...]) -> str:
    if namespace[0] != "user":  # an agent's cases and patterns: migrate-tenant moves users' memories only
        return ""
    label = shlex.quote(namespace[1])
    return (f"Move them to their real owner with: python3 -m session_graph memory migrate-tenant --memory PATH --user {label} "
            f"--from-label {label} --dry-run (then without --dry-run; add --tenant T if they belong to a tenant). ")


def check_owned(store: BaseStore, namespace: tuple[str, ...]) -> None:
    """Refuse an ambiguous namespace that holds items without the marker (see the module); checked
    once per process, store and namespace once it holds none.

    Raises:
        ConfigurationError: naming the label, why, and the two ways out.
    """
    label = namespace[1]
    if ("~" not in label and "%" not in label) or not ambiguous(label):
        return
    with _lock:
        try:
            seen = _checked.setdefault(store, set())
        except TypeError:  # a store that cannot be weakly referenced: checked on every use
            seen = set()
        if namespace in seen:
            return
    if unmarked(store, namespace, limit=1):  # their keys stay out of the message: it may reach a model, and they may be another's
        tenant, owner = owner_of_label(label)
        whose = f"user {owner!r} of tenant {tenant!r}" if tenant is not None else f"{namespace[0]} {owner!r}"
        raise ConfigurationError(
            f"memory namespace {'/'.join(namespace)} (label {label!r}, {whose}) holds items written before owner labels "
            f"were encoded: an older version stored the id {label!r} itself there, "
            f"so they may be another owner's and are not read or written. {_move_hint(namespace)}If they are this owner's, "
            "adopt them with session_graph.memory.migrate.adopt_unmarked(config) (or python3 -m session_graph memory "
            "migrate-tenant ... --adopt)."
        )
    with _lock:
        seen.add(namespace)
