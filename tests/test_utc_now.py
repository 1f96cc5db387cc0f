"""``utc_now``: the text ``datetime`` would write, whatever the instant, also across a millisecond
and a second boundary (the formatted millisecond is cached between calls)."""

from __future__ import annotations

from datetime import UTC, datetime
import random

import pytest

from session_graph._base import ids


def _expected(ns: int) -> str:
    seconds, rest = divmod(ns, 1_000_000_000)
    return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%dT%H:%M:%S") + f".{rest // 1000:06d}Z"


def test_utc_now_matches_datetime_on_a_sequence_of_instants(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = random.Random(7)
    start = 1_767_225_599_998_000_000  # 2025-12-31T23:59:59.998: crosses a millisecond, a second, a day, a year
    instants = [start + step * 1_000 for step in range(0, 5_000, 7)]
    instants += [rng.randrange(0, 4_000_000_000 * 10**9) for _ in range(2_000)]  # jumps both ways
    instants += [start + 999, start + 1_000, start - 1_000, start]  # sub-microsecond and backwards steps
    for ns in instants:
        monkeypatch.setattr(ids.time, "time_ns", lambda ns=ns: ns)
        assert ids.utc_now() == _expected(ns)


def test_utc_now_is_the_clock_now() -> None:
    before = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M")
    stamp = ids.utc_now()
    assert stamp.endswith("Z") and len(stamp) == len("2026-01-31T12:00:00.000001Z")
    assert stamp[:16] >= before


def test_a_day_formatted_by_another_thread_mid_call_is_not_mixed_in(monkeypatch: pytest.MonkeyPatch) -> None:
    """Two threads stamping across midnight: one reads the cached day, another thread replaces it
    with the next day's text before the first uses it. The first stamp keeps its own date."""
    import threading

    last = 1_767_225_599  # 2025-12-31T23:59:59
    mine, other = last * 10**9 + 999_500_000, (last + 1) * 10**9 + 5_000_000
    first = threading.get_ident()
    monkeypatch.setattr(ids.time, "time_ns", lambda: mine if threading.get_ident() == first else other)
    ids.utc_now()  # 2025-12-31 is the cached day
    seen: list[str] = []
    fired: list[bool] = []

    class Interleaved(tuple):  # the cached day, read by this thread; the other thread runs between its reads
        def __getitem__(self, index):  # type: ignore[no-untyped-def, override]
            if index == 0 and not fired and threading.get_ident() == first:
                fired.append(True)
                runner = threading.Thread(target=lambda: seen.append(ids.utc_now()))
                runner.start()
                runner.join()
            return tuple.__getitem__(self, index)

    monkeypatch.setattr(ids, "_DAY", Interleaved(ids._DAY))
    monkeypatch.setattr(ids, "_SECOND", (-1, ""))
    monkeypatch.setattr(ids, "_MILLI", (-1, ""))
    stamp = ids.utc_now()
    assert seen == [_expected(other)]
    assert stamp == _expected(mine)
    assert ids.utc_now() == _expected(mine)  # nor is a wrong text cached for the rest of the second



@pytest.mark.parametrize("ns", [0, 500_000, 998_000, -1_000])
def test_the_first_stamp_of_a_process_near_the_epoch(ns: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """A fresh module's empty cache must not pass for a formatted millisecond (a clock frozen at
    the epoch, as a test may freeze it, got ``001Z``)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("fresh_ids", ids.__file__)
    assert spec is not None and spec.loader is not None
    fresh = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(fresh)
    monkeypatch.setattr(fresh.time, "time_ns", lambda: ns)
    assert fresh.utc_now() == _expected(ns)
