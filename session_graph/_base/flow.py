"""Sync and async from one implementation: code written as a generator of effects.

A node, a handler or a model-backed updater yields the effects it needs (``Call`` a user's
handler, ``Invoke`` a Runnable) and receives their results; ``drive`` runs it from sync
code (``runnable.invoke``, a sync handler called directly: no event loop, no worker
thread), ``adrive`` from async code (``ainvoke``, awaiting an async handler). Only an async
user handler called from sync code needs a loop (``_aio.run_sync``). This is the httpx
``auth_flow`` pattern.
"""

from __future__ import annotations

from collections.abc import Callable, Generator
from dataclasses import dataclass, field
import inspect
from typing import Any, TypeVar

from session_graph._base.aio import maybe_await, resolve_sync

__all__ = ["Call", "Flow", "Invoke", "adrive", "call", "drive", "sync_and_async"]

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Call:
    """Call a user's handler, which may be sync or async."""

    fn: Callable[..., Any]
    args: tuple[Any, ...] = ()


@dataclass(frozen=True, slots=True)
class Invoke:
    """Invoke a Runnable (a chat model, or one wrapped with retries or fallbacks)."""

    runnable: Any
    input: Any
    config: dict[str, Any] = field(default_factory=dict)


Flow = Generator[Call | Invoke, Any, T]


def call(fn: Callable[..., Any], *args: Any) -> Flow[Any]:
    """Call ``fn``: inline, with the caller's driver, if it has a ``flow`` of its own; else as a ``Call``."""
    flow = getattr(fn, "flow", None)
    if flow is not None:
        return (yield from flow(*args))
    return (yield Call(fn, args))


def drive(flow: Flow[T]) -> T:
    """Run a flow from sync code."""
    reply: Any = None
    error: BaseException | None = None
    while True:
        try:
            effect = flow.throw(error) if error is not None else flow.send(reply)
        except StopIteration as stop:
            return stop.value
        error = None
        try:
            if isinstance(effect, Invoke):
                reply = effect.runnable.invoke(effect.input, config=effect.config)
            else:
                reply = resolve_sync(effect.fn(*effect.args))
        except Exception as failure:  # handed to the flow, which decides what a failure means
            error = failure


async def adrive(flow: Flow[T]) -> T:
    """Run a flow from async code (the same flow ``drive`` runs)."""
    reply: Any = None
    error: BaseException | None = None
    while True:
        try:
            effect = flow.throw(error) if error is not None else flow.send(reply)
        except StopIteration as stop:
            return stop.value
        error = None
        try:
            if isinstance(effect, Invoke):
                reply = await effect.runnable.ainvoke(effect.input, config=effect.config)
            else:
                reply = await maybe_await(effect.fn(*effect.args))
        except Exception as failure:
            error = failure


def sync_and_async(make: Callable[..., Flow[T]]) -> tuple[Callable[..., T], Callable[..., Any]]:
    """A sync and an async function running the flow ``make(*args)`` makes."""

    def run(*args: Any, **kwargs: Any) -> T:
        return drive(make(*args, **kwargs))

    async def arun(*args: Any, **kwargs: Any) -> T:
        return await adrive(make(*args, **kwargs))

    for function in (run, arun):
        function.__name__ = getattr(make, "__name__", "flow")
        function.__doc__ = make.__doc__
        function.__signature__ = inspect.signature(make)  # type: ignore[attr-defined]
    return run, arun
