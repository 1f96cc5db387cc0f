"""What a JSONL log holds after its last state line: lines written behind the store's back.

A save writes its records and the state line they make in one write, so a log that goes on
after its state holds records or reset markers someone else appended: by hand, another tool
writing the store's record format, a crash between two writes of an older version, or an older
version itself. Loads count them in (``codec``: the history and the window both end with them);
``JsonlStore`` counts them in its version too, so a save sees the log changed and merges them
(a writable store, under the session's lock; a read-only one, ``create=False``, reads without
it, where they may be a save in flight whose state line takes that number: it loads them but
leaves its version the state's, as before).
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

from session_graph.errors import StoreError
from session_graph.stores.jsonl_log import log_size, tally
from session_graph.stores.jsonl_state import InFlight

__all__ = ["after_state", "version_of"]


def after_state(log: Path, state: dict[str, Any] | None) -> tuple[int, int, int]:
    """(lines, records, markers): the whole lines after the state's ``bytes`` that are no state
    line (records, reset markers: written behind the store's back, by hand, another tool, a crash
    or an older version), the session's record count with them (a reset marker empties it) and
    the reset markers among them (the store counts them in its ``resets``, as a save's clear is:
    a merge then reads the log anew); (0, the state's count, 0) when the log ends with the state,
    or it cannot tell (no ``bytes``, a log cut by hand).

    A store's version is the state's plus these lines (``JsonlStore``): every record or marker
    appended after the state moves it, so a save sees the log changed and merges them; a state
    line written on top of them has a version above it (``update`` counts them in, as
    ``jsonl_log.settle`` gives them from its one read), so no other log ever shows that number.
    A torn last line is no line: it is cut (or skipped), never loaded.
    """
    count, known = int((state or {}).get("message_count", 0)), (state or {}).get("bytes")
    if not isinstance(known, int) or known <= 0 or log_size(log) <= known:
        return 0, count, 0
    try:
        with open(log, "rb") as handle:
            handle.seek(known)
            raw = handle.read()
    except FileNotFoundError:
        return 0, count, 0
    except OSError as error:
        raise StoreError(f"cannot read {log}: {error}") from error
    return tally(raw[: raw.rfind(b"\n") + 1].splitlines(), count)


def version_of(log: Path, written: dict[str, Any] | None, current: Callable[[bool], dict[str, Any] | None],
               holding: Callable[[], AbstractContextManager[Any]], create: bool) -> int | None:
    """``JsonlStore.version``: the state's version plus the lines after it, or None if the session
    is not stored. ``written``: the document the store wrote last (taken when the log is as it
    left it: no read); ``current(settled)``: the state from the meta file or the log's state lines;
    ``holding``: the session's lock. Read without the lock (a writable store), a first save's log
    without its meta file, or lines after the state, may be a save in flight: read again under it,
    where lines after the state are no save's."""
    try:
        state = written if written is not None and written.get("bytes") == log_size(log) else current(not create)
        # a read-only store reads without the lock: lines after the state may be a save in flight,
        # whose state line then takes the same number; only a writable store counts them (under it)
        after = 0 if state is written or not create else after_state(log, state)[0]
        if (state is None or after) and create and log_size(log):  # no state, then a log: a first save landed in between
            raise InFlight
    except InFlight:
        with holding():
            after = after_state(log, state := current(True))[0]
    if state is None:  # a transcript without its meta file is still a session
        return 0 if log_size(log) else None
    return int(state.get("version", 0)) + after
