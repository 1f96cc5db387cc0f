"""A full history whose middle stays in the store until something reads it.

A session loaded from a store needs its window, its memo, its counters and its system
prompt to take a turn; the messages between the first one and the window are only read by a
deep fold that reaches back, an export, or a lookup of an old id. ``LazyHistory`` holds the
first message and everything from the window's start on, knows its length, and pages the
middle in (one store read) on the first access that needs it. It behaves as the list it
stands for: indexing, slicing, iteration, ``len``, ``append``, equality with a list.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, MutableSequence, Sequence
import itertools
import threading
from typing import Any, overload

from langchain_core.messages import BaseMessage

from session_graph._base.forks import renew_after_fork
from session_graph.errors import StoreError

__all__ = ["LazyHistory", "Spliced", "is_loaded", "prefix"]

Loader = Callable[[], "list[BaseMessage]"]
"""Returns the messages at positions ``1 .. start - 1`` (the middle), oldest first."""


class _ForkLock:
    """A lock a forked child gets anew (``_base/forks.py``; a history is a sequence, unhashable)."""

    __slots__ = ("__weakref__", "lock")

    def __init__(self) -> None:
        self.lock = threading.Lock()
        renew_after_fork(self)

    def _after_fork(self) -> None:
        self.lock = threading.Lock()


class LazyHistory(MutableSequence[BaseMessage]):
    """``[first, <middle in the store>, *tail]``; the middle is read on first need.

    Args:
        first: the message at position 0.
        start: the position of ``tail[0]`` (the middle is ``1 .. start - 1``).
        tail: the messages from ``start`` on (appends go here).
        loader: reads the middle; it must return exactly ``start - 1`` messages.
        ids: reads only the middle's ids (cheaper than its messages), or None.
        on_load: told the middle once it is read.
    """

    __slots__ = ("_first", "_ids", "_items", "_loader", "_lock", "_on_load", "_start", "_tail")

    def __init__(
        self, first: BaseMessage, start: int, tail: list[BaseMessage], loader: Loader,
        ids: Callable[[], list[str | None]] | None = None,
        on_load: Callable[[list[BaseMessage]], None] | None = None,
    ) -> None:
        if start < 2:
            raise ValueError("a lazy history needs a middle: start must be >= 2")
        self._first, self._start, self._tail = first, start, tail
        self._loader: Loader | None = loader
        self._ids = ids
        self._on_load = on_load
        self._items: list[BaseMessage] | None = None
        self._lock = _ForkLock()  # a child forked while a thread reads the middle reads it itself

    # -- what is held without reading the store ------------------------------------------------
    @property
    def loaded(self) -> bool:
        """Whether the middle has been read."""
        return self._items is not None

    @property
    def start(self) -> int:
        """The position from which messages are held (everything once loaded)."""
        return 0 if self._items is not None else self._start

    def held(self) -> Iterator[tuple[int, BaseMessage]]:
        """(position, message) of every message held now, without reading the store."""
        if self._items is not None:
            yield from enumerate(self._items)
            return
        yield 0, self._first
        yield from enumerate(self._tail, self._start)

    def middle_ids(self) -> list[str | None]:
        """The ids of the messages at positions ``1 .. start - 1``, read without their messages when
        the store can (a duplicate-id check on append needs no more)."""
        if self._items is None and self._ids is not None:
            ids = self._ids()
            if len(ids) == self._start - 1:
                return ids
        return [m.id for m in self._all()[1 : self._start]]

    def set_on_load(self, on_load: Callable[[list[BaseMessage]], None] | None) -> None:
        """Who is told the middle when it is read."""
        self._on_load = on_load

    def __len__(self) -> int:
        return len(self._items) if self._items is not None else self._start + len(self._tail)

    def append(self, message: BaseMessage) -> None:
        """Add a message at the end (never reads the store)."""
        (self._items if self._items is not None else self._tail).append(message)

    @overload
    def __getitem__(self, index: int) -> BaseMessage: ...
    @overload
    def __getitem__(self, index: slice) -> list[BaseMessage]: ...
    def __getitem__(self, index: int | slice) -> BaseMessage | list[BaseMessage]:
        if self._items is None:
            count = len(self)
            if isinstance(index, slice):
                lo, hi, step = index.indices(count)
                if step == 1 and (lo >= self._start or hi <= lo):
                    return self._tail[lo - self._start : max(hi, lo) - self._start]
            else:
                position = index + count if index < 0 else index
                if position == 0:
                    return self._first
                if self._start <= position < count:
                    return self._tail[position - self._start]
        return self._all()[index]

    # -- everything else reads the middle first ------------------------------------------------
    def _all(self) -> list[BaseMessage]:
        items = self._items
        if items is not None:
            return items
        with self._lock.lock:
            if self._items is None:
                middle = self._loader() if self._loader is not None else []
                if len(middle) != self._start - 1:
                    raise StoreError(
                        f"the stored history does not hold the {self._start - 1} messages before this session's window "
                        f"(read {len(middle)}): it changed since the session was loaded (load it again), or its file was "
                        "edited by hand (a JSONL store: delete the session's .meta.json file, rebuilt from the log at the next load)."
                    )
                self._items = [self._first, *middle, *self._tail]
                self._loader = None
                if self._on_load is not None:
                    self._on_load(middle)
            return self._items

    def load(self) -> list[BaseMessage]:
        """Read the middle now (if not yet) and return the whole history as a list."""
        return self._all()

    def __reduce__(self) -> tuple[Any, ...]:  # copied or pickled read whole: the store's reader and the lock stay here
        return _loaded, (self._all(),)

    def __iter__(self) -> Iterator[BaseMessage]:
        return iter(self._all())

    def __reversed__(self) -> Iterator[BaseMessage]:
        if self._items is None:
            yield from reversed(self._tail)
            yield from reversed(self._all()[: self._start])
            return
        yield from reversed(self._items)

    def __setitem__(self, index: Any, value: Any) -> None:
        self._all()[index] = value

    def __delitem__(self, index: int | slice) -> None:
        del self._all()[index]

    def insert(self, index: int, value: BaseMessage) -> None:
        """Insert before ``index`` (reads the middle)."""
        self._all().insert(index, value)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, LazyHistory):
            other = other._all()
        if not isinstance(other, list):
            return NotImplemented
        return len(self) == len(other) and self._all() == other

    __hash__ = None  # type: ignore[assignment]

    def __add__(self, other: Iterable[BaseMessage]) -> list[BaseMessage]:
        return [*self._all(), *other]

    def __radd__(self, other: Iterable[BaseMessage]) -> list[BaseMessage]:
        return [*other, *self._all()]

    def __repr__(self) -> str:
        if self._items is None:
            return f"LazyHistory({len(self)} messages; {len(self._tail) + 1} held, {self._start - 1} in the store)"
        return repr(self._items)


def is_loaded(history: Any) -> bool:
    """Whether every message of a history is in memory (a list always is)."""
    return not isinstance(history, LazyHistory) or history.loaded


class _Prefix(Sequence[BaseMessage]):
    """The first ``count`` messages of a history, read only when iterated or indexed."""

    __slots__ = ("_count", "_history")

    def __init__(self, history: LazyHistory, count: int) -> None:
        self._history, self._count = history, count

    def __len__(self) -> int:
        return self._count

    def __getitem__(self, index: Any) -> Any:
        return self._history.load()[: self._count][index]

    def __iter__(self) -> Iterator[BaseMessage]:
        return iter(self._history.load()[: self._count])


def _loaded(items: list[BaseMessage]) -> LazyHistory:
    """A lazy history whose middle is read (``LazyHistory.__reduce__``: a copy's)."""
    history = LazyHistory.__new__(LazyHistory)
    history._first, history._start, history._tail, history._items = items[0], 0, [], list(items)  # its own (copy.copy too)
    history._loader = history._ids = history._on_load = None
    history._lock = _ForkLock()
    return history


def prefix(history: Sequence[BaseMessage], count: int) -> Sequence[BaseMessage]:
    """``history[:count]``; of a lazy history, a view that reads the store only when used."""
    if isinstance(history, LazyHistory) and not history.loaded and count > history.start:
        return _Prefix(history, count)
    return history[:count]


class Spliced(Sequence[BaseMessage]):
    """The first ``shared`` messages of a list someone else holds, then a tail of its own: a
    history built on another one without copying their common part (a merge builds the stored
    history on the session's own list this way). ``settle()`` makes that list this history, in
    place, at O(tail) (appends to it since, after ``shared``, are dropped: the caller keeps them).

    Args:
        base: the list whose first ``shared`` messages this history starts with (left unchanged
            until ``settle``).
        shared: how many of them.
        tail: the messages after them (appends and extends go here).
    """

    __slots__ = ("base", "shared", "tail")

    def __init__(self, base: list[BaseMessage], shared: int, tail: list[BaseMessage] | None = None) -> None:
        if not 0 <= shared <= len(base):
            raise ValueError(f"shared must be within the base list (0 .. {len(base)}), not {shared}")
        self.base, self.shared, self.tail = base, shared, tail if tail is not None else []

    def __len__(self) -> int:
        return self.shared + len(self.tail)

    @overload
    def __getitem__(self, index: int) -> BaseMessage: ...
    @overload
    def __getitem__(self, index: slice) -> list[BaseMessage]: ...
    def __getitem__(self, index: int | slice) -> BaseMessage | list[BaseMessage]:
        shared = self.shared
        if isinstance(index, slice):
            lo, hi, step = index.indices(len(self))
            if step != 1:
                return list(self)[index]
            if hi <= lo:
                return []
            if lo >= shared:
                return self.tail[lo - shared : hi - shared]
            return [*self.base[lo : min(hi, shared)], *self.tail[: max(0, hi - shared)]]
        position = index + len(self) if index < 0 else index
        if not 0 <= position < len(self):
            raise IndexError("history index out of range")
        return self.base[position] if position < shared else self.tail[position - shared]

    def __iter__(self) -> Iterator[BaseMessage]:
        yield from itertools.islice(self.base, self.shared)
        yield from self.tail

    def __reversed__(self) -> Iterator[BaseMessage]:
        yield from reversed(self.tail)
        base = self.base
        for position in range(self.shared - 1, -1, -1):
            yield base[position]

    def append(self, message: BaseMessage) -> None:
        """Add a message at the end (to the tail)."""
        self.tail.append(message)

    def extend(self, messages: Iterable[BaseMessage]) -> None:
        """Add messages at the end (to the tail)."""
        self.tail.extend(messages)

    def settle(self) -> list[BaseMessage]:
        """Make ``base`` this history in place (O(tail): what followed its first ``shared`` messages
        is replaced by the tail) and return it."""
        del self.base[self.shared :]
        self.base.extend(self.tail)
        return self.base
