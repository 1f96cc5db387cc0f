"""The JSONL store's terms files written off the save path (issue 25).

``JsonlStore.update`` appends a session's records and state line to its log; indexing them (the
retrieval terms of every message, one terms line per log line) is work a turn need not wait for,
since the index is derived from the log and never trusted: a search brings a terms file behind its
log up to date first (``JsonlSearch._sync``), under the session's lock, from the log byte it last
covered (O(what is new)). So a save only notes the log it grew, and the terms of everything past
the file's end are written (read back from the log, one pass) by the next search, at ``flush``
(``JsonlStore.close``), or, when ``batch_bytes`` is set, once the log is that far ahead. A
process that dies meanwhile leaves the terms file behind, never wrong: a reader catches it up
from the log. A new log gets a header-only terms file at once, so a catch-up resumes from its end.
"""

from __future__ import annotations

import contextlib
import logging
from pathlib import Path
from typing import Any, Protocol

from session_graph.errors import StoreError
from session_graph.stores.search_terms import (
    file_mark,
    header_line,
    line_end,
    parse_line,
    scan_log,
    tail_of,
    terms_path,
)

__all__ = ["BATCH_BYTES", "TermsWriter", "unlink_index"]

log = logging.getLogger(__name__)
BATCH_BYTES: int | None = None
"""How far a save lets a terms file fall behind its log before it writes a batch itself (None: a
save never indexes; a search or ``close`` catches the file up; 0: every save indexes)."""


class LockingStore(Protocol):
    """What the writer needs of its ``JsonlStore``: the session's lock."""

    def _locked(self, tenant: str, key: str) -> contextlib.AbstractContextManager[Any]: ...


class TermsWriter:
    """The terms files one store writes: what each covers, and which are behind their logs."""

    def __init__(self, store: LockingStore) -> None:
        self.store = store
        self.batch_bytes: int | None = BATCH_BYTES
        # terms file -> (its stat when we wrote or read it, the log end it covers, the next seq there)
        self._ends: dict[Path, tuple[tuple[int, int, int], int, int]] = {}
        self._pending: dict[Path, tuple[str, str]] = {}  # log -> (tenant, key) whose terms file may be behind it
        self._paths: dict[Path, Path] = {}  # log -> its terms file (named once)

    def appended(self, log_path: Path, key: str, start: int, lines: list[bytes], tenant: str | None) -> None:
        """Lines were appended to ``log_path`` at byte ``start`` (under the session's lock): write
        the terms file's batch when the log is far enough ahead. An index that cannot be written is
        removed (the next search rebuilds it); the save never fails for it."""
        path = self._paths.get(log_path)
        if path is None:
            self._paths = self._paths if len(self._paths) < 4096 else {}
            path = self._paths[log_path] = terms_path(log_path)
        try:
            if start == 0:  # a new (or emptied) log: a header-only terms file, caught up like any other
                with open(path, "wb") as handle:
                    handle.write(header_line(key))
                self._remember(path, 0, 0)
            if tenant is not None:
                self._pending[log_path] = (tenant, key)
            if self.batch_bytes is None:
                return  # indexed by the next search or at close, from the terms file's end
            end = start + sum(map(len, lines))
            known = self._ends.get(path)  # no stat while the batch is not due: a file another writer
            if known is not None and end - known[1] < self.batch_bytes:  # moved on is only further ahead
                return
            if end - self._covered(path)[0] >= self.batch_bytes:
                self._write_batch(log_path)
        except (OSError, ValueError, TypeError) as error:
            log.warning("could not update the search index %s (%s); the next search rebuilds it", path, error)
            self._ends.pop(path, None)
            unlink_index(path)

    def flush(self) -> None:
        """Write every terms file this store left behind its log (under each session's lock)."""
        pending, self._pending = self._pending, {}
        for log_path, (tenant, key) in pending.items():
            if not log_path.exists():
                continue  # deleted meanwhile: nothing to index (and no folder made again by the lock)
            try:
                with self.store._locked(tenant, key):
                    self._write_batch(log_path)
            except (OSError, ValueError, TypeError, StoreError) as error:
                log.warning("could not catch up the search index of %s (%s); the next search does", log_path, error)

    def forget(self, log_path: Path) -> None:
        """A deleted session: nothing of its terms file is known any more, nothing is pending."""
        self._pending.pop(log_path, None)
        self._ends.pop(self._paths.pop(log_path, terms_path(log_path)), None)

    def _covered(self, path: Path) -> tuple[int, int]:
        """(log byte, next seq) the terms file covers up to; (-1, 0) when missing, damaged or of an older version."""
        mark = file_mark(path)
        known = self._ends.get(path)
        if known is not None and known[0] == mark:
            return known[1], known[2]  # what this store wrote or read last, untouched since
        tail = tail_of(path)  # else read back from the file's end
        if tail is None:
            return -1, 0
        self._ends = self._ends if len(self._ends) < 4096 else {}
        self._ends[path] = (mark, *tail)
        return tail

    def _write_batch(self, log_path: Path) -> None:
        """Append the terms of the log lines past the terms file's end (under the session's lock)."""
        path = terms_path(log_path)
        covered, seq = self._covered(path)
        if covered < 0:
            return  # missing, damaged or foreign: the next search rebuilds it from the log
        out = scan_log(log_path, covered, seq)
        if out:
            with open(path, "ab") as handle:
                handle.write(b"".join(out))
            end = line_end(parse_line(out[-1]) or {})
            if end is None:  # pragma: no cover - scan_log's lines always say where they end
                self._ends.pop(path, None)
            else:
                self._remember(path, *end)
        self._pending.pop(log_path, None)

    def _remember(self, path: Path, covered: int, seq: int) -> None:
        self._ends = self._ends if len(self._ends) < 4096 else {}
        self._ends[path] = (file_mark(path), covered, seq)


def unlink_index(path: Path) -> None:
    """Remove a terms file; a missing one is fine, another failure is a warning (it is caught up or rebuilt)."""
    try:
        path.unlink()
    except FileNotFoundError:
        pass
    except OSError as error:
        log.warning("could not remove the search index %s: %s", path, error)
