"""Stored records decoded one at a time, as they are read.

A store reads a session's records as raw items (the JSONL store: lines of one file buffer; the
SQL stores: rows) and hands them on as ``Records``, a sequence that decodes an item into its
record dict only when it is read. A load turns each record into its message at once, so one
record's dicts and strings are garbage before the next one is decoded and the allocator reuses
their memory for the next: the heap is left as compact as if the messages had been made in
process. Decoding the whole list first (the former way) interleaved 100,000 records' garbage
with the messages' strings and left the heap fragmented: a loaded 100k-message session took
1.6-1.9x the resident memory of the same session appended in process.

``drain()`` reads the records once and lets each raw item go as soon as it is decoded (the SQL
stores' rows: their JSON text is garbage the next record's strings then reuse).
"""

from __future__ import annotations

from array import array
from collections.abc import Callable, Iterator, Sequence
from typing import Any, overload

from session_graph.errors import StoreError

__all__ = ["LineRecords", "PackedRecords", "PackedRows", "Records", "RowRecords"]

Record = dict[str, Any]


class Records(Sequence[Record]):
    """A sequence of records decoded on read (``==`` a list of the same records)."""

    __slots__ = ()

    def _decode(self, index: int) -> Record:
        raise NotImplementedError

    @staticmethod
    def _drained() -> StoreError:
        """The error for reading records ``drain`` already let go."""
        return StoreError("these stored records were already read once (drain); read the session from the store again.")

    def _release(self, index: int) -> None:
        """Let the raw item at ``index`` go (after ``drain`` decoded it)."""

    def _slice(self, indices: range) -> Records:
        raise NotImplementedError

    def _finish(self) -> None:
        """``drain`` read the last record: let go of what holds the raw items (buffers)."""

    def __len__(self) -> int:
        raise NotImplementedError

    @overload
    def __getitem__(self, index: int) -> Record: ...
    @overload
    def __getitem__(self, index: slice) -> Records: ...
    def __getitem__(self, index: int | slice) -> Record | Records:
        count = len(self)
        if isinstance(index, slice):
            return self._slice(range(count)[index])
        if index < 0:
            index += count
        if not 0 <= index < count:
            raise IndexError("record index out of range")
        return self._decode(index)

    def __iter__(self) -> Iterator[Record]:
        for index in range(len(self)):
            yield self._decode(index)

    def drain(self) -> Iterator[Record]:
        """The records once, oldest first, each raw item let go once decoded (the sequence is
        spent after: reading it again raises ``StoreError``)."""
        for index in range(len(self)):
            record = self._decode(index)
            self._release(index)
            yield record
        self._finish()  # the buffers go now (a load trims the heap after: they must be gone by then)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Records | list | tuple):
            return len(self) == len(other) and all(a == b for a, b in zip(self, other, strict=True))
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"{type(self).__name__}({len(self)} records)"


class LineRecords(Records):
    """Records that are JSON lines of one buffer (the JSONL store's log, read in one piece).

    The line offsets are kept in two arrays, outside the object heap, so nothing of them is
    left between the messages made from the lines.
    """

    __slots__ = ("_buffer", "_ends", "_loads", "_spent", "_starts")

    def __init__(self, buffer: bytes, loads: Callable[[Any], Any], starts: array[int] | None = None,
                 ends: array[int] | None = None) -> None:
        self._buffer = buffer
        self._spent = False
        self._loads = loads
        self._starts: array[int] = starts if starts is not None else array("q")
        self._ends: array[int] = ends if ends is not None else array("q")

    def add(self, start: int, end: int) -> None:
        """Add the line ``buffer[start:end]`` (already checked to be a record)."""
        self._starts.append(start)
        self._ends.append(end)

    def clear(self) -> None:
        """Forget the lines added so far (a reset marker empties what came before it)."""
        self._starts, self._ends = array("q"), array("q")

    def __len__(self) -> int:
        return len(self._starts)

    def _finish(self) -> None:
        self._buffer, self._spent = b"", True

    def _decode(self, index: int) -> Record:
        if self._spent:
            raise self._drained()
        record: Record = self._loads(self._buffer[self._starts[index] : self._ends[index]])  # a line's copy, freed at once
        return record

    def _slice(self, indices: range) -> Records:
        starts, ends = array("q", (self._starts[i] for i in indices)), array("q", (self._ends[i] for i in indices))
        return LineRecords(self._buffer, self._loads, starts, ends)


class _RowsRecords(Records):
    """Records kept as a list of rows (``_rows``), a row set to ``None`` once ``drain`` let it go."""

    __slots__ = ()
    _rows: list[Any]

    def __len__(self) -> int:
        return len(self._rows)

    def _row(self, index: int) -> Any:
        row = self._rows[index]
        if row is None:
            raise self._drained()
        return row

    def _release(self, index: int) -> None:
        self._rows[index] = None


class RowRecords(_RowsRecords):
    """Records that are rows of a query, each decoded by ``decode(row)``."""

    __slots__ = ("_decode_row", "_rows")

    def __init__(self, rows: list[Any], decode: Callable[[Any], Record]) -> None:
        self._rows: list[Any] = rows
        self._decode_row = decode

    def _decode(self, index: int) -> Record:
        return self._decode_row(self._row(index))

    def _slice(self, indices: range) -> Records:
        return RowRecords([self._rows[i] for i in indices], self._decode_row)


class PackedRows:
    """Rows fetched one at a time, their last column (a JSON text) packed into one buffer as it
    comes, so the texts never all exist as objects at once (``Exec(fetch="packed")``)."""

    __slots__ = ("buffer", "ends", "rows")

    def __init__(self) -> None:
        self.rows: list[Any] = []
        self.buffer = bytearray()
        self.ends: array[int] = array("q")

    def add(self, row: Sequence[Any]) -> None:
        """Keep the row's other columns; append its last column's text to the buffer."""
        text = row[-1]
        self.buffer += text if isinstance(text, bytes) else str(text).encode("utf-8", "surrogatepass")
        self.ends.append(len(self.buffer))
        self.rows.append(row[:-1])


class PackedRecords(_RowsRecords):
    """Records of ``PackedRows``: ``decode(head, text)`` makes one from a row's other columns and
    its text (a memoryview of the buffer)."""

    __slots__ = ("_decode_row", "_ends", "_rows", "_starts", "_view")

    def __init__(self, packed: PackedRows, decode: Callable[[Any, memoryview], Record],
                 rows: list[Any] | None = None, starts: array[int] | None = None, ends: array[int] | None = None) -> None:
        self._view = memoryview(packed.buffer) if isinstance(packed, PackedRows) else packed
        self._rows: list[Any] = packed.rows if rows is None else rows  # type: ignore[union-attr]
        if starts is None:
            ends = packed.ends  # type: ignore[union-attr]
            starts = array("q", [0])
            starts.extend(ends[:-1])
        self._starts: array[int] = starts
        self._ends: array[int] = ends if ends is not None else array("q")
        self._decode_row = decode

    def _decode(self, index: int) -> Record:
        return self._decode_row(self._row(index), self._view[self._starts[index] : self._ends[index]])

    def _finish(self) -> None:
        self._view.release()  # the buffer goes with the last view of it

    def _slice(self, indices: range) -> Records:
        return PackedRecords(self._view, self._decode_row, [self._rows[i] for i in indices],  # type: ignore[arg-type]
                             array("q", (self._starts[i] for i in indices)), array("q", (self._ends[i] for i in indices)))
