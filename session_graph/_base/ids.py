"""The one place ids and clocks come from, so tests can patch them for stable snapshots."""

from __future__ import annotations

from datetime import date, timedelta
import time
import uuid

from session_graph.errors import InvalidKeyError

MAX_ID_LENGTH = 256
"""The most characters of any free-text identifier that becomes a store key or namespace: a
session key, a tenant, a user or agent id. Each is a Postgres btree key (LangGraph's store keys
on ``(prefix, key)``, session_graph's on ``(tenant, key)``), and a btree entry is bounded
(~2.7 kB): at 256 characters the longest label (4-byte characters, a tenant and a user id,
``%XX`` escapes at 3 bytes a character) with its key stays under it."""


def check_id_length(value: str, argument: str) -> str:
    """``value`` as given, or an ``InvalidKeyError`` (a ``ConfigurationError``) naming
    ``argument``, its length, the cap and the fix when it is longer than ``MAX_ID_LENGTH``."""
    if len(value) > MAX_ID_LENGTH:
        raise InvalidKeyError(
            f"{argument} is {len(value):,} characters long ({value[:40]!r}...); the cap is {MAX_ID_LENGTH} (it becomes a "
            "store key or namespace, which Postgres keeps in a bounded btree index). Use a shorter id, e.g. a stable "
            "digest of the long one: hashlib.sha256(long_id.encode()).hexdigest()."
        )
    return value


def new_id() -> str:
    """A fresh id: a uuid4 in hex, as the reference session uses for its own id."""
    return uuid.uuid4().hex


_EPOCH = date(1970, 1, 1)
_NEVER = -(1 << 62)  # where each cache starts: an instant no clock reads (-1 is one, just before the epoch: its empty text passed)
_DAY: tuple[int, str] = (_NEVER, "")  # the last day formatted (days since the epoch), and its text
_SECOND: tuple[int, str] = (_NEVER, "")  # the last whole second formatted, and its text
_MILLI: tuple[int, str] = (_NEVER, "")  # the microsecond the last formatted millisecond starts at, and its text
_MICROS: tuple[str, ...] = tuple(f"{n:03d}Z" for n in range(1000))  # a millisecond's last three digits, and the Z


def utc_now() -> str:
    """The current UTC time as ISO 8601 with a ``Z`` (``2026-01-31T12:00:00.000001Z``).

    Every appended message is stamped: the text up to the millisecond is made once per
    millisecond (its date once per day, its time once per second, by arithmetic: ``strftime``
    costs several microseconds), then each stamp is one concatenation with its last three
    digits, looked up. The same text as ``datetime.isoformat``.
    """
    global _MILLI
    micros = time.time_ns() // 1000
    milli = _MILLI
    offset = micros - milli[0]
    if not 0 <= offset < 1000:
        offset = micros % 1000
        milli = _MILLI = (micros - offset, _millisecond(micros // 1000))
    return milli[1] + _MICROS[offset]


def stamp_at(micros: int) -> str:
    """``utc_now``'s text for an instant in microseconds since the epoch (a stamp kept as a number)."""
    return _millisecond(micros // 1000) + _MICROS[micros % 1000]


def _millisecond(millis: int) -> str:
    """``YYYY-MM-DDTHH:MM:SS.mmm`` of a count of milliseconds since the epoch."""
    global _DAY, _SECOND
    seconds, milli = divmod(millis, 1000)
    second = _SECOND
    if second[0] != seconds:
        days, rest = divmod(seconds, 86_400)
        day = _DAY  # read once: another thread may replace it with another day's between two reads
        if day[0] != days:
            day = _DAY = (days, (_EPOCH + timedelta(days=days)).isoformat())
        hours, rest = divmod(rest, 3_600)
        minutes, rest = divmod(rest, 60)
        second = _SECOND = (seconds, f"{day[1]}T{hours:02d}:{minutes:02d}:{rest:02d}")
    return f"{second[1]}.{milli:03d}"
