"""Counting a manager's writes in the turn-save tests: one wrapper of ``SessionManager.save``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from session_graph import SessionManager


def counted_writes(manager: SessionManager, record: Callable[[Any, bool], Any] = lambda session, durable: durable) -> list[Any]:
    """The writes ``manager.save`` makes: ``record(session, durable)`` of each save that changed
    the store (by default its ``durable``)."""
    writes: list[Any] = []
    real = manager.save

    def counted(session: Any, *, durable: bool = True) -> None:
        before = manager.store.version(manager.tenant, session.id)
        real(session, durable=durable)
        if manager.store.version(manager.tenant, session.id) != before:
            writes.append(record(session, durable))

    manager.save = counted  # type: ignore[method-assign]
    return writes
