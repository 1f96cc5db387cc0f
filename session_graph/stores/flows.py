"""Store operations written once, as generators, and their sync and async drivers.

A ``SessionManager`` operation (get, save, merge) yields the store calls it needs (``Call``)
and the CPU- or disk-bound work it does between them (``Blocking``), and receives their
results. ``drive`` runs it from sync code; ``adrive`` from async code, with store calls
through their async twins (``call_async``) and blocking work in a worker thread, so an event
loop never waits on disk. A ``StoreConflictError`` a store call raises is thrown back into
the operation, which decides what a conflict means.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Generator
from dataclasses import dataclass, field
from typing import Any

from session_graph.errors import StoreConflictError
from session_graph.stores.base import SessionStore, call_async

__all__ = ["Blocking", "Call", "Operation", "adrive", "drive"]


@dataclass(frozen=True, slots=True)
class Call:
    """A store call an operation asks its driver to make."""

    method: str
    args: tuple[Any, ...]
    kwargs: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Blocking:
    """CPU- or disk-bound work an async driver runs in a worker thread."""

    fn: Callable[[], Any]


Operation = Generator[Call | Blocking, Any, Any]


def drive(store: SessionStore, flow: Operation) -> Any:
    """Run an operation synchronously; returns its result."""
    reply: Any = None
    conflict: StoreConflictError | None = None
    while True:
        try:
            step = flow.throw(conflict) if conflict is not None else flow.send(reply)
        except StopIteration as stop:
            return stop.value
        conflict = None
        try:
            reply = step.fn() if isinstance(step, Blocking) else getattr(store, step.method)(*step.args, **step.kwargs)
        except StoreConflictError as error:
            conflict = error


async def adrive(store: SessionStore, flow: Operation) -> Any:
    """Run an operation from async code (the same operation ``drive`` runs)."""
    reply: Any = None
    conflict: StoreConflictError | None = None
    while True:
        try:
            step = flow.throw(conflict) if conflict is not None else flow.send(reply)
        except StopIteration as stop:
            return stop.value
        conflict = None
        try:
            if isinstance(step, Blocking):
                reply = await asyncio.to_thread(step.fn)
            else:
                reply = await call_async(store, step.method, *step.args, **step.kwargs)
        except StoreConflictError as error:
            conflict = error
