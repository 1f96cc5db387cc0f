"""Drive awaitables from sync code, also inside a running event loop (Jupyter)."""

from __future__ import annotations

import asyncio
import atexit
from collections.abc import Awaitable, Callable
import concurrent.futures
import inspect
import threading
from typing import Any, TypeVar

T = TypeVar("T")

__all__ = ["maybe_await", "resolve_sync", "run_sync"]


def run_sync(make: Callable[[], Awaitable[T]]) -> T:
    """Run a coroutine to completion from sync code.

    With no loop running in this thread, on this thread's private loop (made once: a fresh
    ``asyncio.run`` per call spends a third of a resize setting up signal handlers). Inside
    a running loop (a Jupyter cell, an async framework calling sync code), the coroutine
    runs on a fresh loop in a worker thread: ``run_until_complete`` would fail there.
    """
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return _private_loop().run_until_complete(_as_coroutine(make))
    with concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="session-graph") as pool:
        return pool.submit(lambda: asyncio.run(_as_coroutine(make))).result()


_local = threading.local()
_loops: list[asyncio.AbstractEventLoop] = []


def _private_loop() -> asyncio.AbstractEventLoop:
    loop = getattr(_local, "loop", None)
    if loop is None or loop.is_closed():
        loop = _local.loop = asyncio.new_event_loop()
        _loops.append(loop)
    return loop


@atexit.register
def _close_loops() -> None:
    for loop in _loops:
        if not loop.is_closed() and not loop.is_running():
            loop.close()


async def _as_coroutine(make: Callable[[], Awaitable[T]]) -> T:
    return await make()


def resolve_sync(value: Any) -> Any:
    """A value as is, or the result of an awaitable run to completion."""
    if inspect.isawaitable(value):
        return run_sync(lambda: value)
    return value


async def maybe_await(value: Any) -> Any:
    """Await a value if it is awaitable (handlers may be sync or async)."""
    if inspect.isawaitable(value):
        return await value
    return value
