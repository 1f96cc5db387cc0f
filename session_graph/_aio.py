"""Drive awaitables from sync code, also inside a running event loop (Jupyter)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
import concurrent.futures
import inspect
from typing import Any, TypeVar

T = TypeVar("T")

__all__ = ["maybe_await", "resolve_sync", "run_sync"]


def run_sync(make: Callable[[], Awaitable[T]]) -> T:
    """Run a coroutine to completion from sync code.

    With no loop running in this thread, ``asyncio.run``. Inside a running loop (a Jupyter
    cell, an async framework calling sync code), the coroutine runs on a fresh loop in a
    worker thread: ``run_until_complete`` would fail there, and awaiting is impossible.
    """
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(_as_coroutine(make))
    with concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="session-graph") as pool:
        return pool.submit(lambda: asyncio.run(_as_coroutine(make))).result()


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
