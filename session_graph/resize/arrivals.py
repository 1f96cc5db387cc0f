"""A session's arrival stamps (``Session.arrived_at``): message id -> UTC time, as a mapping
whose appended stamps cost no dict entry and no string each.

An appended message's stamp is a number (microseconds since the epoch) in an array, by its
position in the full history counted from ``base`` (the first message appended since the stamps
were last settled); its id is found where the ledger keeps its position (``Ledger.held_position``:
the one record per message). Stamps set by hand, loaded by a store or settled live in a dict
(``stamps``), apart from the array's. A history replaced (a load, a merge, a restore, a clear)
settles the array into the dict first, read by the positions of the history it was kept for
(``SessionCore.install``). A stamp reads as the text ``utc_now`` would have made at its append
(``_base/ids.stamp_at``). Assigning a mapping replaces every stamp (``ArrivalsField``).
"""

from __future__ import annotations

from array import array
from collections.abc import Iterator, Mapping, MutableMapping, Sequence
from typing import Any, Protocol, overload

from langchain_core.messages import BaseMessage

from session_graph._base.ids import stamp_at
from session_graph.resize.ledger import Ledger
from session_graph.resize.state import SessionState

__all__ = ["Arrivals", "ArrivalsField"]

_GONE = -(1 << 63)  # a stamp replaced or deleted (not -1: a clock before 1970 gives negative stamps)


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
        self._unset = 0  # how many of them are -1

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

    def _appended(self, key: str) -> int | None:
        """``key``'s appended stamp (None: it has none there), read as one snapshot: a reader in
        another thread (a search) while the stamps are settled (``settle`` replaces ``micros``
        before ``base``) gets the settled one from the dict, never another message's."""
        base, micros = self.base, self.micros
        if not micros or type(key) is not str:
            return None
        position = self._core.ledger.held_position(key)
        if position is None or self.micros is not micros:
            return None
        offset = position - base
        value = micros[offset] if 0 <= offset < len(micros) else _GONE
        return value if value != _GONE else None

    def __getitem__(self, key: str) -> str:
        value = self._appended(key)
        return stamp_at(value) if value is not None else self.stamps[key]

    @overload
    def get(self, key: str, /) -> str | None: ...
    @overload
    def get(self, key: str, default: str, /) -> str: ...
    @overload
    def get(self, key: str, default: Any, /) -> Any: ...
    def get(self, key: str, default: Any = None, /) -> Any:
        value = self._appended(key)
        return stamp_at(value) if value is not None else self.stamps.get(key, default)

    def __contains__(self, key: object) -> bool:
        return self._appended(key) is not None or key in self.stamps

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

    def settle(self, history: Sequence[BaseMessage]) -> None:
        """Move the appended stamps into the dict (``history``: the one they were appended to),
        before that history is replaced: their positions would name other messages after it."""
        micros, base, stamps = self.micros, self.base, self.stamps
        for offset, value in enumerate(micros):
            if value != _GONE:
                stamps[history[base + offset].id or ""] = stamp_at(value)
        self.micros, self.base, self._unset = array("q"), -1, 0

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
