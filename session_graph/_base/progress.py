"""The one progress contract: ``progress(done, total)`` for long loads, exports and imports.

A callback gets ``(done, total)``: ``total`` is the number of items when it is known, else
None. It is called once with ``done == 0`` before the work starts, then as items complete
(at most about a hundred times, however many items there are), and once with
``done == total`` at the end. A callback that raises stops the work with its exception.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import TypeVar

from session_graph.errors import ConfigurationError

__all__ = ["Progress", "check_progress", "tracked"]

Progress = Callable[[int, "int | None"], None]
"""``(done, total or None) -> None``: told how far a long load, export or import has got."""

T = TypeVar("T")


def check_progress(progress: object) -> Progress | None:
    """``progress`` if it is None or callable, else a ConfigurationError saying what it must be."""
    if progress is not None and not callable(progress):
        raise ConfigurationError(
            f"progress must be a callable (done, total) -> None, or None; got {type(progress).__name__}."
        )
    return progress  # type: ignore[return-value]


def tracked(items: Iterable[T], total: int | None, progress: Progress | None) -> Iterator[T]:
    """Yield ``items``, telling ``progress`` how many are done (about 100 calls at most)."""
    if progress is None:
        yield from items
        return
    step = max(1, (total or 0) // 100) if total else 1000
    done = 0
    progress(0, total)
    for item in items:
        yield item
        done += 1
        if done % step == 0 and done != total:
            progress(done, total)
    progress(done, total if total is not None else done)
