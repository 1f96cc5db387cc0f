"""The JSONL store's state, written at the cost of what changed.

A save of the JSONL store is one append and one ``fsync``: the new message lines and one
*state line* (what changed in the state document since the previous save) go to the log in
a single write. The log is the durable truth; ``<name>.meta.json`` is a cache of the whole
document (with the resize trace and the log's offsets), replaced after the append without
an ``fsync`` of its own. A crash (``kill -9``) leaves both in the page cache; a power loss
may leave the meta file older than the log, or torn: a reader then rebuilds the state from
the log's state lines (``replay``), so what an ``fsync`` made durable is never lost.

A state line is ``{"_type": "state", "full": true|false, "set": {...}}``: a ``full`` line (the
first of a log, or after a log whose state cannot be trusted) carries the whole document (but
the trace, the offsets and the byte count), the others only the top-level fields that changed
since the state the log ended with, and the window as ``"window+": [dropped, [added ids]]`` when
it only lost messages at its start and gained some at its end (the usual turn). A writer
keeps the document it wrote last (``MetaCache``, checked against the meta file's ``stat``
under the lock), so a save neither reads the meta file back nor re-encodes what did not
change; the trace, which only changes on a resize, is encoded once per change (a save writes
only its new records, as ``"trace+"``: ``stores.jsonl_trace``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from functools import partial
import json
import os
from pathlib import Path
import threading
from typing import Any

try:  # installed with langchain-core (through langsmith) on CPython
    import orjson
except ImportError:  # pragma: no cover
    orjson = None  # type: ignore[assignment]

from session_graph._base.exact_json import check_stored, dumps
from session_graph._base.forks import renew_after_fork
from session_graph.errors import StoreError
from session_graph.stores.jsonl_trace import TRACE_ADDED, LazyTrace, grow_trace

__all__ = [
    "FAST_DUMPS",
    "STATE_PREFIX",
    "Appending",
    "InFlight",
    "MetaCache",
    "Written",
    "current_state",
    "dumps",
    "encode",
    "grown",
    "is_state_line",
    "meta_bytes",
    "replay",
    "state_line",
]

STATE_PREFIX = b'{"_type": "state", '
"""How every state line starts (so a reader tells it from a message record without decoding it)."""

_LOCAL = frozenset({"trace", "offsets", "bytes", "state_lines"})
"""Fields only the meta file carries: the trace (diagnostics; an appended save's new records go as ``"trace+"``), the offsets and the byte count
(both rebuilt from the log when the meta file is behind it), and the mark that the log holds
state lines up to this document (so a writer that did not write it may write what changed only)."""


FAST_DUMPS: Callable[[Any], bytes] = (partial(orjson.dumps, option=orjson.OPT_NON_STR_KEYS) if orjson is not None
                                     else dumps)
"""``dumps`` in one C call, no Python frame, for the write path's many small values; raises
``TypeError`` where orjson refuses the value (the caller then calls ``dumps``): the same bytes."""


_KEYS: dict[str, bytes] = {}


def _key(name: str) -> bytes:
    """``dumps(name) + b":"``, made once per field name (a state line names the same few fields)."""
    key = _KEYS.get(name)
    if key is None:
        key = dumps(name) + b":"
        if len(_KEYS) < 256:  # the document's top-level names: a handful
            _KEYS[name] = key
    return key


def is_state_line(line: bytes) -> bool:
    """Whether a log line is a state line (not a message record)."""
    return line.startswith(STATE_PREFIX)


class Written:
    """A document as this store last wrote it: each top-level field's JSON (what the next save
    compares with, so a field edited in place by the session is still seen as changed), the
    window's ids, and the trace it encoded (the object ``ResizeTrace.dump`` returned)."""

    __slots__ = ("fields", "trace", "window")

    def __init__(self, fields: dict[str, bytes], window: list[Any], trace: Any) -> None:
        self.fields, self.window, self.trace = fields, window, trace


class Appending:
    """What a save that only appends expects the stored state to be (the one its session last
    saved: ``version``, ``persisted`` messages, the ``window`` ids, ``memo`` and ``metadata``),
    the top-level ``fields`` it changes (turns, updated_at; after a lite prune the window start,
    the last resize turn and the trace too) and how many ids the window lost at its start
    (``dropped``: a lite prune)."""

    __slots__ = ("dropped", "fields", "memo", "metadata", "persisted", "version", "window")

    def __init__(self, version: int, persisted: int, window: list[Any], memo: Any, metadata: Any, fields: dict[str, Any],
                 dropped: int = 0) -> None:
        self.version, self.persisted, self.window = version, persisted, window
        self.memo, self.metadata, self.fields, self.dropped = memo, metadata, fields, dropped

    def matches(self, stored: dict[str, Any]) -> bool:
        """Whether ``stored`` is the state this expects (anything else: the caller saves in full;
        the memo is not compared when ``fields`` set it)."""
        return (stored.get("version") == self.version and stored.get("message_count") == self.persisted
                and stored.get("window") == self.window and stored.get("metadata") == self.metadata
                and ("memo" in self.fields or stored.get("memo") == self.memo))


def grown(old: dict[str, Any], written: Written, changed: dict[str, Any], ids: list[Any], dropped: int = 0,
          trace: dict[str, Any] | None = None) -> tuple[dict[str, Any], Written, bytes]:
    """``old`` (as ``written``) with the window's first ``dropped`` ids gone, grown by ``ids``,
    and the ``changed`` fields set: the new document, its encoding (only the changed fields
    encoded again, the trace only when the meta file is written; a changed container kept as
    it was encoded: the session edits its memo in place after a save, the memo and metadata
    checked on that round trip, ``StoreError`` if a store would not keep them exactly) and, in
    the same pass, the state line that says it: the changed fields whose JSON differs, the
    window as ``"window+"`` and ``trace``, the trace rows added (``jsonl_trace.trace_added``)."""
    window = [*old.get("window", ())[dropped:], *ids]
    document = {**old, **changed, "window": window}
    fields = dict(before := written.fields)
    loads = orjson.loads if orjson is not None else json.loads
    parts: list[bytes] = []
    for name, value in changed.items():
        if name == "trace":  # encoded when the meta file is written (``meta_bytes``), not per save
            if value is not written.trace:
                fields.pop("trace", None)
            continue
        try:
            encoded = FAST_DUMPS(value)
        except TypeError:  # an int past 64 bits, a lone surrogate: a memo's refused by the shared check before json meets it
            if name in _EXACT:
                check_stored(value, f"session.{name}")
            encoded = dumps(value)
        fields[name] = encoded
        if isinstance(value, dict | list) and name not in _SHARED:  # the memo: kept as stored, not the session's object
            document[name] = loads(encoded)
        if name in _EXACT and (document[name] != value or not isinstance(value, dict | list)):
            check_stored(value, f"session.{name}")  # the exact-JSON check on this round trip, none of its own
        if name not in _LOCAL and before.get(name) != encoded:
            parts.append((_KEYS.get(name) or _key(name)) + encoded)
    try:
        fields["window"] = FAST_DUMPS(window)
    except TypeError:
        fields["window"] = dumps(window)
    if dropped or ids:
        parts.append(b'"window+":' + dumps([dropped, ids]))
    if trace is not None and trace["rows"]:
        parts.append(b'"trace+":' + dumps(trace))
    line = STATE_PREFIX + b'"full": false, "set": {' + b",".join(parts) + b"}}\n"
    return document, Written(fields, window, changed.get("trace", written.trace)), line


class InFlight(Exception):
    """A read without the session's lock found what a save in flight leaves (the log of a first
    save, its meta file not written yet): the store reads again under the lock."""


def current_state(log: Path, meta: Path, read_meta: Callable[[Path], dict[str, Any] | None]
                  ) -> tuple[dict[str, Any] | None, str | None]:
    """The state document of a session: the meta file as ``read_meta`` reads it, or, when it is
    behind the log or damaged, what the log's state lines after it (or all of them) leave; and
    a recovery message when the meta file was missing or damaged (None otherwise).

    Raises:
        StoreError: the meta file is damaged and the log holds no state line to rebuild it from.
    """
    try:
        size = os.stat(log).st_size
    except FileNotFoundError:
        size = 0
    try:
        state, damaged = read_meta(meta), None
    except StoreError as error:
        state, damaged = None, error
    known = state.get("bytes", -1) if state is not None else -1
    known = known if isinstance(known, int) else -1
    if state is not None and (known == size or known < 0 or known > size):
        return state, None  # as the log is; not written by this version; or a log cut by hand (the full read settles those)
    start = known if state is not None else 0
    try:
        with open(log, "rb") as handle:
            handle.seek(start)
            raw = handle.read()
    except FileNotFoundError:
        raw = b""
    except OSError as error:
        raise StoreError(f"cannot read {log}: {error}") from error
    lines, position = [], start
    for line in raw.split(b"\n"):
        position += len(line) + 1
        if is_state_line(line):
            lines.append((line, position))
    rebuilt, end = replay(lines, state if start else None)
    if rebuilt is None or not end:
        if damaged is not None:
            raise damaged
        return state, None
    rebuilt = {**rebuilt, "bytes": end}
    if not start:
        rebuilt.pop("offsets", None)  # rebuilt from the log alone: index it again
    # on top of the meta file its offsets still hold (they only grow); the newest may be missing
    if state is None:
        return rebuilt, f"{meta} is {'damaged' if damaged else 'missing'}; the session's state was rebuilt from {log}."
    return rebuilt, None


def encode(document: dict[str, Any], previous: Written | None) -> Written:
    """Each field of ``document`` as JSON; the trace's encoding is reused while it is the same object."""
    fields: dict[str, bytes] = {}
    trace = document.get("trace")
    for name, value in document.items():
        if name == "trace":  # the meta file's only: encoded when it is written (``meta_bytes``), once per change
            if previous is not None and previous.trace is value and "trace" in previous.fields:
                fields[name] = previous.fields["trace"]
        else:
            fields[name] = dumps(value)
    window = document.get("window")
    return Written(fields, list(window) if isinstance(window, list) else [], trace)


def meta_bytes(written: Written) -> bytes:
    """The meta file: the whole document, from its fields' JSON (the trace's encoded here, once per change)."""
    if written.trace is not None and "trace" not in written.fields:
        trace = written.trace
        written.fields["trace"] = dumps(trace.value() if isinstance(trace, LazyTrace) else trace)
    return b"{" + b",".join(dumps(name) + b":" + value for name, value in written.fields.items()) + b"}"


def state_line(new: Written, old: Written | None, trace: dict[str, Any] | None = None) -> bytes:
    """The state line that turns ``old`` (as written last; None: write it whole) into ``new``;
    ``trace``: the trace rows added (``jsonl_trace.trace_added``). An appended save's: ``grown``'s."""
    parts: list[bytes] = []
    if old is not None and trace is not None and trace["rows"]:  # a change line only (a full one sets what it holds)
        parts.append(b'"trace+":' + dumps(trace))
    for name, value in new.fields.items():
        if name in _LOCAL or (old is not None and old.fields.get(name) == value):
            continue
        if name == "window" and old is not None:
            grown = _window_change(old.window, new.window)
            if grown is not None:
                parts.append(b'"window+":' + dumps(grown))
                continue
        parts.append(dumps(name) + b":" + value)
    if old is not None:
        gone = [name for name in old.fields if name not in new.fields and name not in _LOCAL]
        if gone:
            parts.append(b'"-":' + dumps(gone))
    full = b"true" if old is None else b"false"
    return STATE_PREFIX + b'"full": ' + full + b', "set": {' + b",".join(parts) + b"}}\n"


def _window_change(old: Any, new: list[Any]) -> list[Any] | None:
    """``[dropped, added]`` when ``new`` is ``old`` without its first ``dropped`` ids plus ``added``."""
    if not isinstance(old, list) or not old:
        return None
    if not new:
        return [len(old), []]
    try:
        dropped = old.index(new[0]) if new[0] != old[0] else 0
    except ValueError:
        return None
    kept = len(old) - dropped
    if kept > len(new) or new[:kept] != old[dropped:]:
        return None
    return [dropped, new[kept:]]


def _apply(document: dict[str, Any] | None, line: dict[str, Any]) -> dict[str, Any] | None:
    changed = line.get("set")
    if not isinstance(changed, dict):
        raise ValueError("a state line without its fields")
    if line.get("full"):
        return dict(changed)
    if document is None:
        return None  # a change with nothing to change: wait for the next full line
    document = dict(document)
    for name in changed.get("-") or ():
        document.pop(name, None)
    for name, value in changed.items():
        if name == "window+":
            dropped, added = value
            document["window"] = [*list(document.get("window") or [])[int(dropped):], *added]
        elif name == TRACE_ADDED:
            document["trace"] = grow_trace(document.get("trace"), value)
        elif name != "-":
            document[name] = value
    return document


def replay(lines: Iterable[tuple[bytes, int]], base: dict[str, Any] | None) -> tuple[dict[str, Any] | None, int]:
    """The state document the state lines among ``lines`` (``(line, offset after it)``) leave,
    applied on ``base``; and the offset after the last state line applied (0: none)."""
    loads = orjson.loads if orjson is not None else json.loads
    document, end = base, 0
    for line, after in lines:
        if not is_state_line(line):
            continue
        try:
            document = _apply(document, loads(line))
        except (ValueError, TypeError, IndexError):
            continue  # a damaged state line: the next full one (or the meta file) takes over
        if document is not None:
            end = after
    return document, end


def _detached(document: dict[str, Any], written: Written) -> dict[str, Any]:
    """``document`` as written, sharing no container with the caller (a session edits its memo
    and metadata in place after a save; an ``update`` function must see what was stored)."""
    loads = orjson.loads if orjson is not None else json.loads
    return {name: loads(written.fields[name]) if isinstance(value, dict | list) and name not in _SHARED and name in written.fields
            else value for name, value in document.items()}


_SHARED = frozenset({"trace", "offsets"})
"""Containers a save makes anew each time (the trace's dump is replaced, never edited)."""
_EXACT = frozenset({"memo", "metadata"})  # given back exactly (``_base/exact_json``), checked by ``grown``


class MetaCache:
    """The document a store wrote last per meta file, trusted while the file's ``stat`` is the
    one it left (another process's write changes its inode, size or mtime)."""

    def __init__(self) -> None:
        self._entries: dict[Path, tuple[tuple[int, int, int], dict[str, Any], Written, int]] = {}
        self._guard = threading.Lock()
        renew_after_fork(self)  # a forked child gets a new guard (a thread holding it is not there)

    def _after_fork(self) -> None:
        self._guard = threading.Lock()

    @staticmethod
    def _signature(path: Path) -> tuple[int, int, int] | None:
        try:
            status = os.stat(path)
        except OSError:
            return None
        return status.st_ino, status.st_size, status.st_mtime_ns

    def get(self, path: Path) -> tuple[dict[str, Any] | None, Written | None, int]:
        """(the document and its encoding, if the file is still the one written here; the log
        size the meta file on disk describes)."""
        with self._guard:
            entry = self._entries.get(path)
        if entry is None:
            return None, None, 0
        if self._signature(path) != entry[0]:
            with self._guard:
                self._entries.pop(path, None)
            return None, None, 0
        return entry[1], entry[2], entry[3]

    def put(self, path: Path, document: dict[str, Any], written: Written, on_disk: int | None = None, *,
            detached: bool = False) -> None:
        """Remember ``document`` as written; ``on_disk``: the log size the meta file describes
        (None: the meta file was just rewritten with this document; else it is the file the
        cached entry's ``stat`` describes, untouched under the session's lock: no ``stat`` again);
        ``detached``: it shares no container with a caller already (``grown`` from a cached
        document), so it is kept as is."""
        with self._guard:
            known = self._entries.get(path) if on_disk is not None else None
        signature = known[0] if known is not None else self._signature(path)
        with self._guard:
            if signature is None:
                self._entries.pop(path, None)
            else:
                if len(self._entries) > 4096 and path not in self._entries:
                    self._entries.pop(next(iter(self._entries)))
                at = int(document.get("bytes", 0)) if on_disk is None else on_disk
                self._entries[path] = (signature, document if detached else _detached(document, written), written, at)

    def forget(self, path: Path) -> None:
        with self._guard:
            self._entries.pop(path, None)
