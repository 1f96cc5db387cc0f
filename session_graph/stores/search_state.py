"""The in-memory state of the JSONL store's search index (``search_index``), and what a dense
index kept up to date reads of it.

Per tenant: one BM25 index (``retrieval.bm25``: document ids given out in order, removed ones
left as tombstones), where each message's line is in its log, and how far each session's terms
file was applied. ``documents_since`` answers "what was indexed since this mark" from the ids
alone: O(new messages), so ``retrieval.dense.DenseIndex.search_source`` never lists a tenant per
query. A mark names the index object (weakly) and its tombstones: a rebuilt index, or any message
removed since (a reset, a dropped session), makes the caller list the tenant again.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any
import weakref

from session_graph.retrieval.bm25 import Bm25Index

__all__ = ["LogState", "TenantState", "documents_since"]

Ref = tuple[str, int]


@dataclass
class LogState:
    """How far one session's terms file was applied."""

    key: str
    consumed: int = 0  # bytes of the terms file applied
    end: int = 0  # bytes of the log the index covers
    seq: int = 0  # the next seq expected
    identity: tuple[int, int] = (0, 0)  # (device, inode) of the terms file applied
    log_inode: int = 0


@dataclass
class TenantState:
    """One tenant's index: BM25, where each message is, what was checked when."""

    index: Bm25Index = field(default_factory=Bm25Index)
    sessions: dict[str, LogState] = field(default_factory=dict)  # by log file name
    where: dict[Ref, tuple[str, int, int, str | None, str, str]] = field(default_factory=dict)  # name, offset, bytes, id, role, ts
    times: list[str] = field(default_factory=list)  # ts by document id
    synced: float = -1.0  # time.monotonic() of the last check of the files
    appends: int = 0  # JsonlSearch._appends at that check
    marker: int | None = None  # the folder's mtime (ns) at the last full scan, when old enough to trust
    scanned: float = -1.0  # time.monotonic() of the last full scan


def documents_since(state: TenantState, mark: Any = None) -> tuple[Any, list[tuple[Ref, str | None, str]] | None]:
    """``(the mark now, ((key, seq), message id, ts) of the messages indexed since mark)``; None for
    the messages when ``mark`` is None, of another index, or messages were removed since: the
    caller lists them all (``documents``) once."""
    index = state.index
    now = (weakref.ref(index), index.ids, index.ids - len(index))
    if mark is None or mark[0]() is not index or mark[2] != now[2] or mark[1] > now[1]:
        return now, None
    added = []
    for ref in index.keys_since(mark[1]):
        where = state.where.get(ref)  # type: ignore[call-overload]
        if where is not None:
            added.append((ref, where[3], where[5]))
    return now, added
