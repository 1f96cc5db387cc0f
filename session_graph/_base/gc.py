"""Pausing the cyclic garbage collector while a session is decoded.

Decoding a stored session makes hundreds of thousands of objects in one go; the collector
would run over and over while they are made (a 100,000-message load took 2.5x as long, and
grew faster than linear). Nothing made there is garbage, so the collector is paused for the
duration and restored after, also on error. Pauses nest and are thread-safe.
"""

from __future__ import annotations

from collections.abc import Iterator
import contextlib
import gc
import threading

__all__ = ["paused_gc"]

_lock = threading.Lock()
_depth = 0
_was_enabled = False


@contextlib.contextmanager
def paused_gc() -> Iterator[None]:
    """Run the block with the cyclic collector paused (it is restored to what it was)."""
    global _depth, _was_enabled
    with _lock:
        if _depth == 0:
            _was_enabled = gc.isenabled()
            gc.disable()
        _depth += 1
    try:
        yield
    finally:
        with _lock:
            _depth -= 1
            if _depth == 0 and _was_enabled:
                gc.enable()
