"""A commit lease in the session store: one commit of a session at a time, across processes
(and, with ``purpose="fold"``, one memo or summary fold of a session at a time).

The file memory store serialises commits with a file lock; any other memory store (SQLite,
Postgres, in memory) has no lock other processes see, so two processes committing one
session both ran the model on the same archive. The lease lives in the *session* store,
which every process shares and which already updates one key atomically under its writer
lock: a small document under the tenant ``<tenant>#commit-leases`` (never listed with the
tenant's sessions) says who holds the commit and until when.

- :meth:`CommitLease.acquire` waits (polling) until the lease is free or expired, then takes
  it in one atomic ``update``;
- :meth:`CommitLease.renew` extends it (the manager renews at every journaled step, so a
  long commit keeps it); a holder that died stops renewing and the lease expires after
  ``ttl`` seconds;
- :meth:`CommitLease.release` clears it only if it is still this holder's.
"""

from __future__ import annotations

import hashlib
import time
from typing import Any
import uuid

from session_graph.errors import StoreError
from session_graph.stores.base import MAX_KEY_LENGTH, SessionStore, StoreChange, StoredSession

__all__ = ["CommitLease", "lease_tenant"]


def lease_tenant(tenant: str, purpose: str = "commit") -> str:
    """The tenant that holds ``tenant``'s leases for ``purpose`` (``#`` keeps it apart from real tenants' names).
    A tenant so long that the name would pass the key cap (which the store holds it to, as any
    tenant) is named by its digest instead: every tenant the cap accepts can take its leases."""
    name = f"{tenant}#{purpose}-leases"
    if len(name) <= MAX_KEY_LENGTH:
        return name  # the names stored before
    return f"{tenant[:80]}#{hashlib.sha256(tenant.encode('utf-8', 'surrogatepass')).hexdigest()}#{purpose}-leases"


class CommitLease:
    """The commit lease of one session.

    Args:
        store: the session store shared by every process.
        tenant: the session's tenant.
        key: the session key.
        ttl: seconds a lease lasts without a renewal.
        wait: the longest ``acquire`` waits for another holder (then ``StoreError``).
        purpose: what the lease serialises (``"commit"``; ``"fold"``: a memo or summary fold of
            the session, see ``integrations/binding.py``): each purpose has its own leases.
    """

    def __init__(self, store: SessionStore, tenant: str, key: str, *, ttl: float = 300.0, wait: float = 3600.0,
                 purpose: str = "commit") -> None:
        self.store, self.tenant, self.key = store, lease_tenant(tenant, purpose), key
        self.ttl, self.wait = ttl, wait
        self.owner = uuid.uuid4().hex
        self.waited = 0.0  # seconds the last acquire waited for another holder (for measurement)

    def _change(self, take: bool, result: list[bool]) -> Any:
        def change(stored: StoredSession) -> StoreChange | None:
            lease = (stored.state or {}).get("lease") or {}
            now = time.time()
            mine = lease.get("owner") == self.owner
            free = not lease or mine or float(lease.get("until", 0)) < now
            if take:
                result.append(free)
                if not free:
                    return None
                return StoreChange({"lease": {"owner": self.owner, "until": now + self.ttl}})
            result.append(mine)
            return StoreChange({"lease": {}}) if mine else None

        return change

    def try_acquire(self) -> bool:
        """Take the lease if it is free or expired (or already ours); whether it was taken."""
        result: list[bool] = []
        self.store.update(self.tenant, self.key, self._change(True, result))
        return bool(result and result[-1])

    def acquire(self, poll: float = 0.05) -> None:
        """Wait until the lease is ours.

        Raises:
            StoreError: another holder kept it for longer than ``wait`` seconds.
        """
        started = time.monotonic()
        while not self.try_acquire():
            if time.monotonic() - started > self.wait:
                raise StoreError(f"another process has been committing session {self.key!r} for over {self.wait:.0f} s; "
                                 "nothing was done: commit again later.")
            time.sleep(poll)
        self.waited = time.monotonic() - started

    def renew(self) -> None:
        """Extend the lease by ``ttl`` from now (when it is still ours)."""
        self.try_acquire()

    def release(self) -> None:
        """Clear the lease if it is still ours."""
        self.store.update(self.tenant, self.key, self._change(False, []))

    def __enter__(self) -> CommitLease:
        self.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()
