"""The one place ids and clocks come from, so tests can patch them for stable snapshots."""

from __future__ import annotations

from array import array
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
    ``argument``, its length, the cap and the fix when it is longer than ``MAX_ID_LENGTH``, or
    the character when it holds a lone surrogate (no UTF-8 encodes it: no file name, SQL text
    or namespace label can hold it, and the store failed with a bare ``UnicodeEncodeError``)."""
    if not value.isascii():
        try:
            value.encode()
        except UnicodeEncodeError as error:
            raise InvalidKeyError(
                f"{argument} {value[:40]!r} holds a lone surrogate ({value[error.start]!r}), which is not valid UTF-8 and cannot "
                "be stored; decode the text with errors='replace' (or fix its source) before using it as an id."
            ) from None
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
    return stamp_at(time.time_ns() // 1000)


def stamp_at(micros: int) -> str:
    """``utc_now``'s text for an instant in microseconds since the epoch (a stamp kept as a number).

    Consecutive stamps of a session share their millisecond or at least their second: the text
    up to the millisecond is kept for the last one read (``_MILLI``), and up to the second
    (``_SECOND``, ``_millisecond``'s), so a stamp is one lookup and one or two concatenations."""
    global _MILLI
    milli = _MILLI  # read once: another thread may replace it between two reads
    offset = micros - milli[0]
    if 0 <= offset < 1000:
        return milli[1] + _MICROS[offset]
    offset = micros % 1000
    start = micros - offset
    second = _SECOND
    within = start // 1000 - second[0] * 1000
    text = second[1] + _MILLIS[within] if second[1] and 0 <= within < 1000 else _millisecond(start // 1000)
    _MILLI = (start, text)
    return text + _MICROS[offset]


_MILLIS: tuple[str, ...] = tuple(f".{n:03d}" for n in range(1000))
_FIRST = -62_135_596_800_000_000  # 0001-01-01T00:00:00.000000Z, the first instant ``stamp_at`` writes
_LAST = 253_402_300_799_999_999  # 9999-12-31T23:59:59.999999Z, its last


def micros_not_before(text: str) -> int:
    """The first instant whose ``stamp_at`` text is at or after ``text`` (as text compares), so
    ``stamp_at(m) >= text`` is ``m >= micros_not_before(text)`` for every instant ``m``: a time
    bound compared with numbers, read once (its instant when it is in ``utc_now``'s form, else
    found by bisection: ``stamp_at``'s text grows with its instant)."""
    exact = micros_of(text)
    if exact is not None:
        return exact
    low, high = _FIRST, _LAST + 1  # stamp_at(high - 1) < text < ... : the answer is in [low, high]
    while low < high:
        middle = (low + high) // 2
        if _stamp_of(middle) >= text:
            high = middle
        else:
            low = middle + 1
    return low


def _stamp_of(micros: int) -> str:
    """``stamp_at``'s text, made without touching its caches (a bisection reads far-apart instants)."""
    seconds, micro = divmod(micros, 1_000_000)
    day, rest = divmod(seconds, 86_400)
    return f"{(_EPOCH + timedelta(days=day)).isoformat()}T{rest // 3600:02d}:{rest // 60 % 60:02d}:{rest % 60:02d}.{micro:06d}Z"


_DIGITS3: dict[str, int] = {f"{n:03d}": n for n in range(1000)}  # "000".."999": a check and a parse in one lookup
_SECONDS60: dict[str, int] = {f"{n:02d}": n for n in range(60)}
_MINUTE: tuple[str, int] = ("", 0)  # the last ``YYYY-MM-DDTHH:MM:`` read, and its instant in microseconds


def micros_of(text: str) -> int | None:
    """``stamp_at``'s inverse: the instant of a stamp in exactly ``utc_now``'s form, or None for
    any other text (then ``stamp_at`` of a number could not give it back byte for byte).

    A stored session's stamps share their minute in runs: its ``YYYY-MM-DDTHH:MM:`` part is read
    once per run (one entry kept), the seconds and microseconds by lookups in digit tables."""
    global _MINUTE
    if len(text) != 27 or text[19] != "." or text[26] != "Z":
        return None
    second, high, low = _SECONDS60.get(text[17:19]), _DIGITS3.get(text[20:23]), _DIGITS3.get(text[23:26])
    if second is None or high is None or low is None:
        return None
    minute = _MINUTE
    prefix = text[:17]
    if minute[0] != prefix:
        start = _minute_of(prefix)
        if start is None:
            return None
        minute = _MINUTE = (prefix, start)
    return minute[1] + second * 1_000_000 + high * 1_000 + low


STAMP_WIDTH = 27  # len("2026-01-31T12:00:00.000001Z"): every stamp ``utc_now`` makes
_SEPARATORS = ((4, b"-"), (7, b"-"), (10, b"T"), (13, b":"), (16, b":"), (19, b"."), (26, b"Z"))
_DIGITS = (0, 1, 2, 3, 5, 6, 8, 9, 11, 12, 14, 15, 17, 18, 20, 21, 22, 23, 24, 25)  # the columns of digits
_VALUE = bytes.maketrans(b"0123456789", bytes(range(10)))
_TWENTY = bytes(1 if byte == ord("2") else 0 for byte in range(256))  # an hour's first digit: 1 where it is 2
_FOUR_ON = bytes(1 if byte >= ord("4") else 0 for byte in range(256))  # its second: 1 where it is 4 or more


def micros_of_many(text: bytes, count: int) -> array[int] | None:
    """``micros_of`` of ``count`` stamps written one after another in ``text`` (ASCII), all at
    once, or None if any of them is not in ``utc_now``'s form (then read them one by one).

    A load reads every record's stamp: one by one, their slices and lookups would cost several
    percent of it. Each column of the fixed-width stamps is one byte string here
    (``text[c::27]``), checked whole, and the digits are read into numbers for every stamp at
    once, on integers holding one stamp in each 64-bit lane (SWAR: digit pairs, then groups of
    four, then eight, by multiply, shift and mask): C loops; Python runs per distinct day only."""
    if len(text) != count * STAMP_WIDTH or count == 0:
        return array("q") if count == 0 and not text else None
    w = STAMP_WIDTH
    if any(text[column::w] != mark * count for column, mark in _SEPARATORS):
        return None
    if b"".join(text[column::w] for column in _DIGITS).translate(None, b"0123456789"):
        return None  # not an ASCII digit where digits go
    if text[11::w].translate(None, b"012") or text[14::w].translate(None, b"012345") or text[17::w].translate(None, b"012345"):
        return None  # hours, minutes or seconds out of range
    late = int.from_bytes(text[11::w].translate(_TWENTY), "little") & int.from_bytes(text[12::w].translate(_FOUR_ON), "little")
    if late:
        return None  # an hour of 24 or more
    lanes = int.from_bytes((b"\x01" + b"\x00" * 7) * count, "little")  # 1 in each lane: times a lane's mask, the mask of all

    def packed(columns: tuple[int | None, ...]) -> int:
        lane = bytearray(8 * count)
        for at, column in enumerate(columns):
            if column is not None:
                lane[at::8] = text[column::w].translate(_VALUE)
        return int.from_bytes(lane, "little")

    def pairs(x: int) -> int:  # 8 digits a lane, the first one most significant -> 4 values of 2 digits (16-bit sub-lanes)
        return ((x * 2561) >> 8) & (0x00FF00FF00FF00FF * lanes)

    def eight(x: int) -> int:  # -> the lane's 8-digit number
        x = ((pairs(x) * 6553601) >> 16) & (0x0000FFFF0000FFFF * lanes)
        return ((x * 42949672960001) >> 32) & (0xFFFFFFFF * lanes)

    def unpacked(x: int) -> array[int]:
        values = array("q")
        values.frombytes(x.to_bytes(8 * count, "little"))
        return values

    codes = unpacked(eight(packed((0, 1, 2, 3, 5, 6, 8, 9))))  # YYYYMMDD
    days: dict[int, int] = {}
    for code in dict.fromkeys(codes):
        try:
            day = (date(code // 10_000, code // 100 % 100, code % 100) - _EPOCH).days
        except ValueError:
            return None
        if day < 0:
            return None  # before the epoch: no stamp this version writes
        days[code] = day
    clock = pairs(packed((11, 12, 14, 15, 17, 18, None, None)))  # hh, mm, ss in 16-bit sub-lanes
    mask = 0xFFFF * lanes
    seconds = (clock & mask) * 3600 + ((clock >> 16) & mask) * 60 + ((clock >> 32) & mask)
    fraction = eight(packed((None, None, 20, 21, 22, 23, 24, 25)))
    day_lanes = int.from_bytes(array("q", map(days.__getitem__, codes)).tobytes(), "little")
    return unpacked(day_lanes * 86_400_000_000 + seconds * 1_000_000 + fraction)


def _minute_of(prefix: str) -> int | None:
    """The instant (microseconds since the epoch) of ``YYYY-MM-DDTHH:MM:`` as ``stamp_at`` writes it, or None."""
    if not (prefix.isascii() and prefix[4] == "-" and prefix[7] == "-" and prefix[10] == "T" and prefix[13] == ":" and prefix[16] == ":"):
        return None
    try:
        day = date.fromisoformat(prefix[:10])
    except ValueError:
        return None
    hour, minute = _SECONDS60.get(prefix[11:13]), _SECONDS60.get(prefix[14:16])
    if hour is None or minute is None or hour > 23 or day < _EPOCH:
        return None
    start = (((day - _EPOCH).days * 24 + hour) * 60 + minute) * 60_000_000
    return start if _millisecond(start // 1000)[:17] == prefix else None  # written back the same, or not ours


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
