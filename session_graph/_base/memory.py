"""Handing memory a large load freed back to the operating system.

A load decodes each record and frees it before the next (``stores.records``), so Python's own
allocator reuses that memory; what glibc's ``malloc`` holds for objects over 512 bytes (long
texts, a SQL driver's row buffers) stays mapped in the process after it is freed unless it is
trimmed. ``trim_heap()`` asks glibc to return its free pages (``malloc_trim(0)``: about a
millisecond on a 50 MB heap); elsewhere (macOS, musl, Windows) it does nothing.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import sys
from typing import Any

__all__ = ["TRIM_AFTER", "trim_heap"]

TRIM_AFTER = 10_000
"""Loads of at least this many messages trim the heap after (smaller ones free too little)."""


@functools.cache
def _malloc_trim() -> Any:
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        return libc.malloc_trim  # glibc only: musl has no malloc_trim
    except (OSError, AttributeError):
        return None


def trim_heap() -> bool:
    """Return glibc's free heap pages to the OS; False where there is no ``malloc_trim``."""
    trim = _malloc_trim()
    if trim is None:
        return False
    trim(0)
    return True
