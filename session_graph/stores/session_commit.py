"""A SessionManager's commits into long-term memory: the session saved after every step.

``commit`` stores the session first, then runs ``session.commit()`` holding one commit lock
per session across processes (the file memory store's own lock, or for any other memory
store a lease in the session store: ``stores.lease``), saving after each step that changed
the session (the archive, each journaled result) and renewing the lease; a process that dies
mid-commit leaves a pending archive the next ``commit()`` resumes, from any process.
"""

from __future__ import annotations

import contextlib
from typing import Any, Protocol

from session_graph.errors import ConfigurationError
from session_graph.memory.apply import owner_lock
from session_graph.memory.config import MemoryConfig
from session_graph.session import Session
from session_graph.stores.base import SessionStore
from session_graph.stores.lease import CommitLease
from session_graph.stores.session_load import SessionCache


class Committer(Protocol):
    """What a commit uses of its ``SessionManager``."""

    store: SessionStore
    tenant: str
    memory: MemoryConfig | None
    cache: SessionCache

    def save(self, session: Session, *, durable: bool = True) -> None: ...
    def get(self, key: str) -> Session | None: ...
    def commit(self, session: Session, *, dry_run: bool = False, wait: bool = True) -> dict[str, Any]: ...


def commit(manager: Committer, session: Session, *, dry_run: bool = False, wait: bool = True) -> dict[str, Any]:
    """``session.commit()`` with the session saved after every step that changed it (see ``SessionManager.commit``)."""
    if manager.memory is not None and (session.memory is None or session.memory.owners() != manager.memory.owners()
                                       or session.memory.memory_store is not manager.memory.memory_store):
        session.memory = manager.memory  # a tenant's sessions commit into that tenant's memory, whatever made them
    if session.memory is None:
        raise ConfigurationError("commit() needs long-term memory: SessionManager(..., memory=MemoryConfig(...)).")
    manager.save(session)  # what the commit archives is stored first
    # one commit of a session at a time, across processes: the file memory store's lock, or
    # for any other memory store a lease in the session store (see stores/lease.py)
    store = session.memory.memory_store
    shared = contextlib.nullcontext() if hasattr(store, "owner_lock") else CommitLease(manager.store, manager.tenant, session.id)
    with shared as lease, owner_lock(store, ("session", f"{manager.tenant}/{session.id}")):
        manager.get(session.id)  # another process's commit or messages, merged in

        def checkpoint(_: Any) -> None:
            manager.save(session)
            if lease is not None:
                lease.renew()

        result = session.commit(dry_run=dry_run, wait=wait, checkpoint=None if dry_run else checkpoint)
        if not dry_run:
            manager.save(session)
    return result


def scoped_memory(memory: MemoryConfig | None, tenant: str) -> MemoryConfig | None:
    """A manager's memory within its tenant (``MemoryConfig.for_tenant``; the ``"default"`` tenant:
    as configured), so two tenants' sessions never write one namespace.

    Raises:
        ConfigurationError: ``memory`` is already another tenant's.
    """
    if memory is None:
        return None
    wanted = None if tenant == "default" else tenant
    if memory.tenant not in (None, wanted):
        raise ConfigurationError(f"this SessionManager is tenant {tenant!r} but its MemoryConfig is tenant "
                                 f"{memory.tenant!r}; pass memory.for_tenant(None) (or that tenant's manager).")
    return memory.for_tenant(wanted) if memory.tenant is None else memory


def drain_commits(manager: Committer) -> list[dict[str, Any]]:
    """Finish the commits started with ``wait=False`` of the cached sessions (one result each)."""
    results = []
    for entry in manager.cache:
        if (entry.session.state.archives or {}).get("pending") and entry.session.memory is not None:
            results.append(manager.commit(entry.session))
    return results
