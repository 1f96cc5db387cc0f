"""A session's arrival stamps (``Session.arrived_at``): message id -> UTC time, as a mapping
whose appended stamps cost no dict entry and no string each.

An appended message's stamp is a number (microseconds since the epoch) in an array, by its
position in the full history counted from ``base``; its id is found where the ledger keeps its
position (``Ledger.held_position``: the one record per message, or the index of a loaded
history). Stamps set by hand, in another form than ``utc_now``'s, or settled live in a dict
(``stamps``), apart from the array's. A history replaced (a load, a merge, a restore, a clear)
settles the array once the new one is installed (``SessionCore.install``): the positions where
the new history holds the same message objects keep their numbers, the others move into the
dict by id, read by the positions of the history they were kept for. A stamp reads as the text
``utc_now`` would have made at its append (``_base/ids.stamp_at``). Assigning a mapping
replaces every stamp (``ArrivalsField``).

A loaded session's stamps are kept the same way: a store's load reads each record's stamp into
``LoadedStamps`` (a number by position when ``stamp_at`` gives its text back byte for byte; any
other text, an older store's or an import's, stays in the dict as it was stored), which the
session adopts after its restore (``Arrivals.adopt``): a loaded session costs what an appended
one does. A copy, a pickle or a ``|`` of the mapping is a plain dict.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterable, Iterator, Mapping, MutableMapping, Sequence
import io
from typing import Any, Protocol, overload

from langchain_core.messages import BaseMessage

from session_graph._base.ids import STAMP_WIDTH, micros_of, micros_of_many, stamp_at
from session_graph.resize.ledger import Ledger
from session_graph.resize.state import SessionState

__all__ = ["PLACEHOLDER", "Arrivals", "ArrivalsField", "LoadedStamps", "stamps_of"]

_GONE = -(1 << 63)  # a stamp replaced or deleted (not -1: a clock before 1970 gives negative stamps)
_MISSING: Any = object()  # ``get``'s default when the key has no stamp
PLACEHOLDER = "1970-01-01T00:00:00.000000Z"  # written for a stamp kept in the dict, so every stamp has its width


class LoadedStamps:
    """The stamps of a load's records, read in the pass that makes their messages: a number by
    position from ``base`` (the position of the first record), or ``_GONE`` with the stored text in
    ``stamps`` by id when it is not ``utc_now``'s form. The load writes each stamp to ``text``
    (``write``: one C call a record) and ``finish`` reads them all at once (``micros_of_many``)."""

    __slots__ = ("base", "count", "micros", "odd", "stamps", "text", "unset")

    def __init__(self, base: int = 0) -> None:
        self.base = base
        self.micros = array("q")
        self.stamps: dict[str, Any] = {}
        self.unset = 0
        self.text: io.StringIO | None = io.StringIO()  # the records' stamps, one after another (``STAMP_WIDTH`` each)
        self.odd = array("q")  # the records whose stamp is in ``stamps`` (a placeholder in ``text``)
        self.count = 0

    def write(self, message_id: str | None, record_id: Any, stamp: Any) -> None:
        """The stamp of the next record (``record_id``: the id it was stored under); the load
        inlines this (see ``stores/codec.messages_of``)."""
        assert self.text is not None
        if message_id and message_id == record_id and type(stamp) is str and len(stamp) == STAMP_WIDTH:
            self.text.write(stamp)
        else:
            self.text.write(PLACEHOLDER)
            self.odd.append(self.count)
            self.stamps[message_id if message_id and message_id == record_id else str(record_id)] = stamp
        self.count += 1

    def finish(self, messages: Sequence[BaseMessage], first: int) -> None:
        """Read the stamps written (the messages of the records from ``messages[first]`` on)."""
        assert self.text is not None
        odd, count = self.odd, self.count
        if len(odd) == count:  # every stamp in another form (an older store's): nothing to read
            self.text, self.micros, self.odd, self.unset = None, array("q", [_GONE]) * count, array("q"), count
            return
        text, self.text = self.text.getvalue(), None
        micros = micros_of_many(text.encode("ascii"), count) if text.isascii() else None
        if micros is None:  # one by one: a stamp in another form goes to the dict as stored
            micros = array("q")
            for index in range(count):
                stamp = text[index * STAMP_WIDTH : (index + 1) * STAMP_WIDTH]
                value = micros_of(stamp)
                if value is None:
                    self.stamps[messages[first + index].id or ""] = stamp
                micros.append(_GONE if value is None else value)
        for index in odd:
            micros[index] = _GONE
        self.micros, self.odd = micros, array("q")
        self.unset = micros.count(_GONE)

    def skip_first(self, start: int, first: BaseMessage) -> None:
        """A lazy history: its first record is ``first``, at position 0, and the next at ``start``
        (the middle stays in the store): the first stamp goes to the dict."""
        micros = self.micros
        if micros:
            if micros[0] != _GONE:
                self.stamps[first.id or ""] = stamp_at(micros[0])
            else:
                self.unset -= 1
            del micros[0]
        self.base = start


class _Core(Protocol):
    state: SessionState
    ledger: Ledger


class Arrivals(MutableMapping[str, str]):
    """Arrival stamps by message id: a dict's behaviour, an appended message's stamp kept as 8 bytes."""

    __slots__ = ("_core", "_unset", "base", "micros", "stamps")

    def __init__(self, core: _Core) -> None:
        self._core = core
        self.stamps: dict[str, str] = {}  # set, loaded or settled stamps
        self.micros = array("q")  # appended messages' stamps by position - base (_GONE: replaced or deleted, see stamps)
        self.base = -1  # the position of the first of them (-1: none since the last settle)
        self._unset = 0  # how many of them are _GONE

    def _offset(self, key: object) -> int:
        """Where ``key``'s appended stamp is in ``micros`` (-1: it has none there)."""
        micros = self.micros
        if not micros or type(key) is not str:
            return -1
        position = self._core.ledger.held_position(key)
        if position is None:
            return -1
        offset = position - self.base
        return offset if 0 <= offset < len(micros) and micros[offset] != _GONE else -1

    def __getitem__(self, key: str) -> str:
        value = self.get(key, _MISSING)
        if value is _MISSING:
            raise KeyError(key)
        return value

    @overload
    def get(self, key: str, /) -> str | None: ...
    @overload
    def get(self, key: str, default: str, /) -> str: ...
    @overload
    def get(self, key: str, default: Any, /) -> Any: ...
    def get(self, key: str, default: Any = None, /) -> Any:
        # ``key``'s appended stamp read as one snapshot: a reader in another thread (a search) while
        # the stamps are settled (``settle`` replaces ``micros`` before ``base``) gets the settled
        # one from the dict, never another message's
        base, micros = self.base, self.micros
        if micros and type(key) is str:
            position = self._core.ledger.held_position(key)
            if (position is not None and self.micros is micros and 0 <= (offset := position - base) < len(micros)
                    and (value := micros[offset]) != _GONE):
                return stamp_at(value)
        return self.stamps.get(key, default)

    def instants(self, keys: Iterable[str]) -> list[int | None]:
        """Each key's appended or loaded stamp as a number (microseconds; ``stamp_at`` gives its
        text), None where it has none of those (a stamp in the dict, in whatever form it was
        kept, or none: read it with ``get``), for a reader of many (a search's time filter):
        no text made."""
        keys = keys if isinstance(keys, list) else list(keys)  # read again if settled meanwhile
        base, micros = self.base, self.micros
        if not micros:
            return [None] * len(keys)
        size = len(micros)
        found: list[int | None] = []  # not ``list[int | None]()``: a generic alias called costs ~20x a list
        append = found.append
        try:
            for position in self._core.ledger.held_positions(keys):
                if position is not None and 0 <= (offset := position - base) < size and (value := micros[offset]) != _GONE:
                    append(value)
                else:
                    append(None)
        except IndexError:  # cut by a settle meanwhile (another thread): read again
            return self.instants(keys)
        if self.micros is not micros or self.base != base:  # settled meanwhile (another thread): read again
            return self.instants(keys)
        return found

    def texts(self, keys: Iterable[str], default: Any = None) -> list[Any]:
        """``[self.get(key, default) for key in keys]`` at a fraction of its cost (a full save's
        records): ``instants``' numbers as text, consecutive ones sharing their text up to the
        millisecond or second (``stamp_at``), the dict read for the others."""
        keys = keys if isinstance(keys, list) else list(keys)
        get = self.stamps.get
        return [get(key, default) if value is None else stamp_at(value) for key, value in zip(keys, self.instants(keys), strict=True)]

    def __contains__(self, key: object) -> bool:
        return self.get(key, _MISSING) is not _MISSING  # type: ignore[call-overload]

    def __setitem__(self, key: str, value: str) -> None:
        offset = self._offset(key)
        if offset >= 0:
            self.micros[offset] = _GONE
            self._unset += 1
        self.stamps[key] = value

    def __delitem__(self, key: str) -> None:
        offset = self._offset(key)
        if offset < 0:
            del self.stamps[key]
            return
        self.micros[offset] = _GONE
        self._unset += 1
        self.stamps.pop(key, None)

    def __iter__(self) -> Iterator[str]:
        yield from self.stamps
        history, base, held = self._core.state.full_chat_history, self.base, self._core.ledger.held_position
        for offset, value in enumerate(self.micros):
            if value != _GONE:
                key = history[base + offset].id or ""
                if held(key) == base + offset:  # a message swapped in place there (by a node) has no stamp to read
                    yield key

    def __len__(self) -> int:
        return len(self.stamps) + len(self.micros) - self._unset

    def __repr__(self) -> str:
        return repr(dict(self))

    def copy(self) -> dict[str, str]:
        """A dict of every stamp (as ``dict.copy`` gave when ``arrived_at`` was a dict)."""
        return dict(self)

    __copy__ = copy

    def __deepcopy__(self, memo: dict[int, Any]) -> dict[str, str]:
        return dict(self)  # the stamps are strings: a dict of them is a deep copy

    def __reduce__(self) -> tuple[type[dict[str, str]], tuple[dict[str, str]]]:
        return dict, (dict(self),)  # pickled as a dict of the stamps, not with the session behind them

    def __or__(self, other: Mapping[str, str]) -> dict[str, str]:
        return {**self, **other}

    def __ror__(self, other: Mapping[str, str]) -> dict[str, str]:
        return {**other, **self}

    def __ior__(self, other: Mapping[str, str]) -> Arrivals:
        self.update(other)
        return self

    def clear(self) -> None:
        self.replace({})

    def adopt(self, loaded: LoadedStamps, keep: bool = False) -> None:
        """The stamps a store's load read for the history just installed (its records from
        ``loaded.base`` on); ``keep``: the stamps held before stay (a reload of the records after
        the held ones), those loaded replace any of the same ids."""
        micros, base, history = loaded.micros, loaded.base, self._core.state.full_chat_history
        stamps = self.stamps if keep else loaded.stamps
        unset = loaded.unset
        if keep:
            if stamps:
                for offset, value in enumerate(micros):
                    if value != _GONE:
                        stamps.pop(history[base + offset].id or "", None)
            stamps.update(loaded.stamps)
            held, start = self.micros, self.base
            if held and 0 <= base - start <= len(held):  # the held ones kept by position (``settle``): the loaded follow them
                unset += self._unset - held[base - start :].count(_GONE)  # O(what is cut): the held prefix may be long
                del held[base - start :]
                held.extend(micros)
                micros, base = held, start
        self.stamps, self.micros, self.base, self._unset = stamps, micros, base if micros else -1, unset
        if micros and not self._core.ledger.distinct_ids():  # an id held twice: its last stamp only, as a dict kept it
            position = self._core.ledger.held_position
            for offset, value in enumerate(micros):
                if value != _GONE:
                    message_id = history[base + offset].id or ""
                    if position(message_id) != base + offset:
                        micros[offset] = _GONE
                        self._unset += 1
                    elif stamps:
                        stamps.pop(message_id, None)  # an earlier message of this id's stored text

    def settle(self, history: Sequence[BaseMessage], new: Sequence[BaseMessage] = (), shared: int | None = None) -> None:
        """The stamps by position of ``history`` (the one they were kept for), now replaced by
        ``new``: those of the positions where ``new`` holds the same message objects stay numbers
        (``shared``: the caller knows how many leading ones; else compared by identity, plain
        lists only), the others move into the dict by id (their positions may name other
        messages now); the numbers then run to ``new``'s end (``_GONE`` past what was kept), so appends
        go on by position."""
        micros, base, stamps = self.micros, self.base, self.stamps
        if not micros:
            return
        kept = _same_prefix(history, new, base, base + len(micros)) if shared is None else min(shared, base + len(micros))
        keep = max(0, kept - base)
        for offset in range(keep, len(micros)):
            value = micros[offset]
            if value != _GONE:
                stamps[history[base + offset].id or ""] = stamp_at(value)
        if not keep:
            self.micros, self.base, self._unset = array("q"), -1, 0
            return
        unset = self._unset - micros[keep:].count(_GONE)  # O(what is cut): a merge keeps the long prefix
        del micros[keep:]
        pad = len(new) - base - keep
        if pad > 0:
            micros.extend(array("q", [_GONE]) * pad)
        self._unset = unset + max(pad, 0)

    def start_at(self, history: Sequence[BaseMessage], position: int) -> None:
        """The next appended stamp is for ``position``: the stamps kept so far settled first when
        the history grew by other means since (a node that appended to it in place), so that each
        stays with its message (the positions they were kept for still hold them)."""
        if self.micros:
            self.settle(history)
        self.base = position

    def replace(self, stamps: Mapping[str, str]) -> None:
        """Every stamp replaced by ``stamps`` (a dict is taken as it is, not copied)."""
        self.stamps = stamps if type(stamps) is dict else dict(stamps)
        self.micros, self.base, self._unset = array("q"), -1, 0


def _same_prefix(old: Sequence[BaseMessage], new: Sequence[BaseMessage], start: int, stop: int) -> int:
    """How far from ``start`` (up to ``stop``) ``new`` holds the very objects ``old`` does, both
    plain lists (``start``: nothing before it is asked about); ``start`` for any other history
    (reading a lazy one's middle would read the store)."""
    if type(old) is not list or type(new) is not list:
        return start
    if old is new:
        return min(stop, len(new))
    stop = min(stop, len(old), len(new))
    position = start
    while position < stop and old[position] is new[position]:
        position += 1
    return position


def stamps_of(arrived: Mapping[str, Any], messages: Iterable[BaseMessage], default: Any) -> list[Any]:
    """``arrived.get(message.id or "", default)`` of each message, at a fraction of its cost for
    an ``Arrivals`` (``Arrivals.texts``: a full save's or an export's stamps)."""
    ids = [message.id or "" for message in messages]
    return arrived.texts(ids, default) if isinstance(arrived, Arrivals) else [arrived.get(i, default) for i in ids]


class _HasCore(Protocol):
    @property
    def _core(self) -> _HasArrivals: ...


class _HasArrivals(Protocol):
    arrivals: Arrivals


def _arrivals(session: _HasCore) -> Arrivals:
    """Arrival times by message id (UTC, ISO 8601 with a ``Z``), kept by the stores: a mapping
    kept up to date as messages are appended; assigning a mapping replaces every stamp."""
    return session._core.arrivals


def _replace(session: _HasCore, stamps: Mapping[str, str]) -> None:
    session._core.arrivals.replace(stamps)


class ArrivalsField(property):
    """``Session.arrived_at``: its core's ``Arrivals`` (the same object for the session's life,
    kept up to date); assigning a mapping replaces every stamp, as a load does."""

    def __init__(self) -> None:
        super().__init__(_arrivals, _replace)

    @overload
    def __get__(self, owner: None, kind: type | None = None) -> ArrivalsField: ...
    @overload
    def __get__(self, owner: _HasCore, kind: type | None = None) -> Arrivals: ...
    def __get__(self, owner: _HasCore | None, kind: type | None = None) -> Arrivals | ArrivalsField:
        return self if owner is None else owner._core.arrivals

    def __set__(self, owner: _HasCore, value: Mapping[str, str]) -> None:
        owner._core.arrivals.replace(value)
