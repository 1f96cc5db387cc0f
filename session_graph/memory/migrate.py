"""Moving a user's memories written before tenancy under a tenant: an explicit, idempotent step.

Before tenancy, a tenant's manager dropped the tenant: the users its runs named wrote at their
own ids (``("user", "bob", ...)``, the same place for bob in every tenant: that was the leak), and
``SessionManager.for_tenant("acme")`` itself wrote as a user named ``acme``. With tenancy every owner of a tenant lives at
``tenant~id`` (``categories.tenant_owner``), so nothing reads the old place any more. Which of its
memories belong to which tenant only the operator knows, so nothing moves by itself:
:func:`migrate_to_tenant` moves one user's old-place memories (their items, their version history)
under a tenant the operator names, and lists what it would move with ``dry_run=True``
(``python3 -m session_graph memory migrate-tenant``). The same step moves the memories of an
id whose label the encoding changed (one holding ``~`` or a ``%XX``, written before as the id
itself: ``from_label``) to its label now. Run again, it moves nothing more; an item
whose key the tenant already holds with other content is left where it was, with its past versions, and
reported (``conflict``), never overwritten. The agent's memories (cases, patterns) are not moved: before
tenancy every tenant wrote them to one place, so they cannot be told apart.

:func:`warn_unmigrated` logs one warning line the first time (per process, store and owner) a
tenant's config finds its user's memories empty while an old place holds some.
"""

from __future__ import annotations

from collections.abc import Callable
import contextlib
import logging
import re
import threading
from typing import Any
import weakref

from langgraph.store.base import BaseStore

from session_graph.errors import ConfigurationError
from session_graph.memory.apply import index_fields, owner_lock
from session_graph.memory.categories import (
    CATEGORIES,
    content_hash,
    history_namespace,
    memory_namespace,
    memory_uri,
    tenant_owner,
)
from session_graph.memory.changes import bump
from session_graph.memory.config import MemoryConfig, moved_to
from session_graph.memory.owner_mark import MARK, owner_mark, unmarked

__all__ = ["adopt_unmarked", "migrate_to_tenant", "warn_unmigrated"]

log = logging.getLogger(__name__)
_LIMIT = 1_000_000
_USER_CATEGORIES = [name for name, rule in CATEGORIES.items() if rule.owner == "user"]


def migrate_to_tenant(memory: MemoryConfig, tenant: str | None, *, from_user: str | None = None,
                      from_label: str | None = None, dry_run: bool = False) -> list[dict[str, Any]]:
    """Move the memories kept at ``from_user``'s tenant-less place (default: ``memory.user``'s own;
    the tenant's id for what ``for_tenant(tenant)`` wrote as its user) into ``memory.user``'s
    namespaces within ``tenant``, with their history, in ``memory``'s store.

    ``from_label``: instead of ``from_user``, the old place's owner label exactly as stored, for
    an id whose label the encoding changed (written before as the id itself: one holding ``~`` or a
    ``%XX``); with ``tenant=None`` its memories move to the user's own label without a tenant.

    Returns:
        one record per item or history entry, ``{"kind": "item"|"history", "category", "key",
        "from", "to", "action"}``; ``action`` is ``"move"`` (moved, or would be in a dry run),
        ``"same"`` (the tenant already holds the same content: the old copy is removed) or
        ``"conflict"`` (the tenant holds other content at that key: left in place).

    Raises:
        ConfigurationError: no tenant (and no ``from_label``), both ``from_user`` and
            ``from_label``, a label no store holds, or a source that is the target itself.
    """
    if tenant is not None and (not isinstance(tenant, str) or not tenant):
        raise ConfigurationError(f"migrate_to_tenant: the tenant must be a non-empty string, got {tenant!r}.")
    if from_label is not None and (from_user is not None or not isinstance(from_label, str) or not from_label
                                   or any(ch in from_label for ch in "./\x00")):
        raise ConfigurationError(f"migrate_to_tenant: give from_label (a stored owner label: no '.', '/' or NUL) or "
                                 f"from_user, not both; got from_label={from_label!r:.80}, from_user={from_user!r:.80}.")
    if tenant is None and from_label is None:
        raise ConfigurationError("migrate_to_tenant needs the tenant to move memories under (or from_label to relabel).")
    target = moved_to(memory, tenant)  # an over-cap id served as it was stored before the cap keeps its id
    if target.tenant is None and tenant is not None and from_label is None:
        raise ConfigurationError(f"migrate_to_tenant: tenant {tenant!r} is SessionManager's default tenant, whose memories "
                                 "are already at the tenant-less place; nothing to move (name another tenant).")
    old_owner = from_label if from_label is not None else tenant_owner(None, from_user if from_user is not None else memory.user)
    store = memory.memory_store
    report: list[dict[str, Any]] = []
    for category in _USER_CATEGORIES:
        new = target.namespace(category)
        old = (new[0], old_owner, *new[2:])
        if old == new:
            raise ConfigurationError(f"migrate_to_tenant: {old} is already the target; name another from_user.")
        with contextlib.ExitStack() as locks:
            for owner in ([] if dry_run else sorted({(old[0], old[1]), (new[0], new[1])})):  # one order: no deadlock
                locks.enter_context(owner_lock(store, owner))
            try:  # history first, each entry only with its item: one the tenant holds as another item keeps its past
                report += _move(store, history_namespace(old), history_namespace(new), category, "history", dry_run,
                                apart=lambda key, old=old, new=new: _apart(store, old, new, key))
                report += _move(store, old, new, category, "item", dry_run)
            except Exception as error:  # Postgres keys rows by a bounded btree index: tenant~<a legacy long id> can overflow it
                if type(error).__name__ != "ProgramLimitExceeded":
                    raise
                raise ConfigurationError(
                    f"migrate_to_tenant: the store refused {new[1]!r:.80} ({len(new[1]):,} characters) as too long for its "
                    f"index under tenant {tenant!r:.40}; nothing is lost (an item not moved stays where it was). Move the "
                    "memories to a shorter id: migrate_to_tenant(MemoryConfig(user=<short id>, ...), tenant, from_user=<the long "
                    "id>) (CLI: --user SHORT --from-user LONG).") from error
    return report


def _apart(store: BaseStore, old: tuple[str, ...], new: tuple[str, ...], key: str) -> bool:
    """Whether the tenant holds another item at ``key`` than the one of the old place's history
    (the old item conflicts with it, or is gone and the tenant has its own)."""
    there = store.get(new, key)
    if there is None:
        return False
    mine = store.get(old, key)
    return mine is None or not _same(there.value, mine.value)


def _move(store: BaseStore, old: tuple[str, ...], new: tuple[str, ...], category: str, kind: str,
          dry_run: bool, apart: Callable[[str], bool] | None = None) -> list[dict[str, Any]]:
    """Each item of ``old`` (exactly that namespace) put at ``new`` and then deleted, unless ``new``
    holds other content at its key (or, for a history entry, ``apart`` says its item's key is
    another item's there). Put first, so a crash between the two leaves a copy the next run finds
    as ``same``; the change feeds of both places record the keys."""
    report = []
    for item in sorted(store.search(old, limit=_LIMIT), key=lambda i: i.key):
        if tuple(item.namespace) != old:
            continue
        value = dict(item.value)
        # what the value says of its place follows it (readers never trust it); a past version names its item
        place = {"owner": f"{new[0]}/{new[1]}", "uri": memory_uri(new, str(value.get("key") or item.key.split("@v")[0]))}
        value.update((name, text) for name, text in place.items() if name in value)
        value[MARK] = owner_mark(new)  # moved by the operator to its owner: marked as theirs (owner_mark)
        there = store.get(new, item.key)
        action = "move" if there is None else "same" if _same(there.value, value) else "conflict"
        if action == "move" and apart is not None and apart(item.key.rpartition("@v")[0]):
            action = "conflict"
        report.append({"kind": kind, "category": category, "key": item.key, "from": "/".join(old), "to": "/".join(new),
                       "action": action})
        if dry_run or action == "conflict":
            continue
        if action == "move":
            active = kind == "item" and value.get("status") == "active"
            store.put(new, item.key, value, index=index_fields(value) if active else False)
        if kind == "item":  # "same" too: a run killed between the put and this bump left the feed without it
            bump(store, new, item.key)
        store.delete(old, item.key)
        if kind == "item":
            bump(store, old, item.key)
    return report


def _same(stored: dict[str, Any], moved: dict[str, Any]) -> bool:
    text = str(stored.get("content", ""))
    return content_hash(text) == content_hash(str(moved.get("content", ""))) and stored.get("version") == moved.get("version")


def adopt_unmarked(memory: MemoryConfig, *, dry_run: bool = False) -> list[dict[str, Any]]:
    """The documented opt-in for an ambiguous label (``owner_mark``): mark the items without the
    marker in ``memory``'s namespaces (user and agent categories) as its owner's, so
    ``MemoryConfig.namespace`` reads them again. Only for items the operator knows are this
    owner's; otherwise move them with ``migrate_to_tenant(..., from_label=...)``. Idempotent.

    Returns:
        one record per item, ``{"category", "key", "namespace", "action": "adopt"}``.
    """
    store = memory.memory_store
    report: list[dict[str, Any]] = []
    for category in CATEGORIES:
        namespace = memory_namespace(category, memory.user, memory.agent, memory.tenant)  # unguarded: the fix itself
        keys = unmarked(store, namespace)
        if not keys or dry_run:
            report += [{"category": category, "key": key, "namespace": "/".join(namespace), "action": "adopt"} for key in keys]
            continue
        with owner_lock(store, (namespace[0], namespace[1])):
            for key in unmarked(store, namespace):
                item = store.get(namespace, key)
                if item is None:
                    continue
                value = {**item.value, MARK: owner_mark(namespace)}
                store.put(namespace, key, value, index=index_fields(value) if value.get("status") == "active" else False)
                bump(store, namespace, key)
                report.append({"category": category, "key": key, "namespace": "/".join(namespace), "action": "adopt"})
    return report


_warned: weakref.WeakKeyDictionary[Any, set[tuple[str, str]]] = weakref.WeakKeyDictionary()
_warned_lock = threading.Lock()
_UNSAFE = re.compile(r"[^\w@%+=:,./-]")


def warn_unmigrated(memory: MemoryConfig) -> None:
    """Once per process, store and owner: when a tenant's config finds its user's memories empty
    and an old place (the user's own id, or the tenant's id as ``for_tenant`` used it before
    tenancy) holds some, log one warning line naming the migration. A few single-item listings,
    once; a store that fails them is left to fail the read that follows."""
    if memory.tenant is None:
        return
    store = memory.memory_store
    with _warned_lock:
        try:
            seen = _warned.setdefault(store, set())
        except TypeError:  # a store that cannot be weakly referenced: never warned about
            return
        if (memory.tenant, memory.user) in seen:
            return
        seen.add((memory.tenant, memory.user))
    try:
        if _holds(store, memory):
            return
        old = next((owner for owner in dict.fromkeys((memory.user, memory.tenant))
                    if _holds(store, memory.for_tenant(None).for_user(owner))), None)
    except Exception as error:  # advice only
        log.debug("warn_unmigrated: %s", error)
        return
    if old is not None:
        place = "/".join(memory.for_tenant(None).for_user(old).namespace("profile")[:2])
        log.warning("memory of user %r in tenant %r is empty, but %s holds memories written before tenancy; move them "
                    "with: python3 -m session_graph memory migrate-tenant --memory PATH --tenant %s --user %s --from-user %s "
                    "--dry-run (then without --dry-run)", memory.user, memory.tenant, place, _shell(memory.tenant),
                    _shell(memory.user), _shell(old))


def _holds(store: BaseStore, memory: MemoryConfig) -> bool:
    """Whether any of the user's categories holds an item (one single-item listing each)."""
    return any(store.search(memory.namespace(category), limit=1) for category in _USER_CATEGORIES)


def _shell(text: str) -> str:
    return text if text and not _UNSAFE.search(text) else "'" + text.replace("'", "'\\''") + "'"
