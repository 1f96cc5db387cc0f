"""Readers of many arrival stamps (``Session.arrived_at``) read the numbers they are kept as:
a search's ``since``/``until`` filter (``MessageSource.rank``, bounds read once as instants by
``_base/ids.micros_not_before``), a save's records (``Arrivals.texts``, ``stamps_of``), and
``stamp_at`` itself keeps its last millisecond's text. Each gives what reading every stamp's
text one by one gave: the same hits in the same order, the same records, the same text."""

from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import Path
import random
import time
from typing import Any

from langchain_core.messages import AIMessage, HumanMessage
import pytest

from session_graph import Session
from session_graph._base import ids
from session_graph._base.ids import micros_not_before, stamp_at, utc_now
from session_graph.interop.nanobot import session_history
from session_graph.resize.arrivals import stamps_of
from session_graph.resize.ledger import Ledger
from session_graph.retrieval.messages import MessageSource
from session_graph.retrieval.search import time_bound
from session_graph.stores import JsonlStore, SessionManager

START = 1_767_225_599_999_990_000  # ns: the appends cross a second, a minute, a day and a year


def _reference(micros: int) -> str:
    return (datetime(1970, 1, 1) + timedelta(microseconds=micros)).strftime("%Y-%m-%dT%H:%M:%S.%fZ").rjust(27, "0")


def _session(monkeypatch: pytest.MonkeyPatch, count: int, step_ns: int = 1_000) -> Session:
    ticks = iter(range(START, START + 10**15, step_ns))
    monkeypatch.setattr(time, "time_ns", lambda: next(ticks))
    session = Session("k")
    session.set_settings("session.resize.every_n_turns", 0)
    for i in range(count):
        word = "alpha" if i % 3 == 0 else "beta"
        session.append_message((HumanMessage if i % 2 == 0 else AIMessage)(content=f"message {i} {word}", id=f"m{i}"))
    return session


def test_stamp_at_reads_as_the_text_of_its_instant_in_any_order() -> None:
    rng = random.Random(7)
    base = START // 1000
    instants = [base + i for i in range(3000)]  # consecutive: one millisecond's, one second's, the next
    instants += [base + rng.randrange(-10**12, 10**12) for _ in range(3000)]  # scattered
    instants += [ids._FIRST, ids._LAST, 0, -1, 999, 1000, -1000, -1001]
    for micros in instants:
        assert stamp_at(micros) == _reference(micros) == ids._stamp_of(micros), micros
        utc_now()  # the clock's own cache between two reads changes nothing


def test_a_bound_read_as_an_instant_orders_as_its_text() -> None:
    rng = random.Random(3)
    near = START // 1000
    bounds = ["2026-01-01T00:00:00.000000Z", "2025-12-31T23:59:59.99999Z", "2025-12-31T23:59:59.999995", "2026-01-01",
              "2026-01-01T00", "2026-01-01T00:00:00.000000+00:00", "", "0", "9999-99", "~", "2025-12-31 23:59:59",
              stamp_at(near + 5), stamp_at(near + 5)[:-1], stamp_at(near + 5) + "0"]
    for bound in bounds:
        threshold = micros_not_before(bound)
        for micros in [threshold - 1, threshold, threshold + 1, *(near + rng.randrange(-10**7, 10**7) for _ in range(200))]:
            if ids._FIRST <= micros <= ids._LAST:
                assert (stamp_at(micros) >= bound) == (micros >= threshold), (bound, micros)


def test_texts_and_stamps_of_are_what_get_gives(monkeypatch: pytest.MonkeyPatch) -> None:
    session = _session(monkeypatch, 40)
    stamps = session.arrived_at
    stamps["m3"] = "2020-01-01 by hand"  # over an appended stamp: kept in the dict as set
    del stamps["m4"]
    stamps["elsewhere"] = "2021-01-01T00:00:00.000000Z"
    history = list(session.full_chat_history)
    keys = [m.id or "" for m in history] + ["elsewhere", "nope", ""]
    assert stamps.texts(keys, "now") == [stamps.get(k, "now") for k in keys]
    assert stamps.texts(iter(keys)) == [stamps.get(k) for k in keys]
    assert stamps_of(stamps, history, "now") == [stamps.get(m.id or "", "now") for m in history]
    assert stamps_of(dict(stamps), history, "now") == [stamps.get(m.id or "", "now") for m in history]
    numbers = stamps.instants(keys)
    assert [stamp_at(n) if n is not None else stamps.get(k) for k, n in zip(keys, numbers, strict=True)] == [stamps.get(k) for k in keys]
    assert numbers[3] is None and numbers[4] is None and numbers[5] is not None  # the hand-set and deleted ones read from the dict
    session.clear()  # the stamps settle into the dict by id: still the same texts
    assert stamps.texts(keys, "now") == [stamps.get(k, "now") for k in keys] and stamps.texts(["m7"]) == [stamp_at(START // 1000 + 7)]


def _reference_hits(session: Session, query: str, since: str | None, until: str | None, k: int) -> list[int]:
    """The hits as reading each stamp's text gave them: the unfiltered ranking, kept where the text is in range."""
    everything = session.search(query, k=10_000)
    inside = [h.seq for h in everything
              if (since is None or session.arrived_at.get(h.message_id or "", "") >= since)
              and (until is None or session.arrived_at.get(h.message_id or "", "") < until)]
    return inside[:k]


def test_a_search_by_time_finds_what_comparing_texts_found(monkeypatch: pytest.MonkeyPatch) -> None:
    session = _session(monkeypatch, 300, step_ns=7_919_000)  # 7.9 ms apart: the stamps span seconds
    stamps = session.arrived_at
    stamps["m9"] = "2025-12-31 odd"  # kept as another text (an import's): compared as text
    stamps["m12"] = "2026-01-01"  # a date only: before every stamp of that day as text
    stamps["m15"] = "2026-01-01T00:00:01.000000Z"  # set by hand in utc_now's form
    del stamps["m18"]  # no stamp: "" as before
    history = session.full_chat_history
    middle = [stamps[history[i].id or ""] for i in (0, 40, 150, 299)]
    for since, until in [(middle[1], middle[2]), (middle[0], None), (None, middle[2]), ("2026-01-01", None),
                         ("2025-12-31", "2026-01-01T00:00:01"), (middle[2], middle[1]), ("2026-01-01T00:00:00.5", None)]:
        for k in (5, 50):
            found = [h.seq for h in session.search("alpha", k=k, since=since, until=until)]  # bounds read as stores write stamps

            assert found == _reference_hits(session, "alpha", time_bound(since, "since"), time_bound(until, "until"), k), (since, until, k)


def test_rank_compares_any_bound_text_as_text_did(monkeypatch: pytest.MonkeyPatch) -> None:
    session = _session(monkeypatch, 120, step_ns=13_000_000)
    session.arrived_at["m6"] = "2025-12-31 odd"
    source = MessageSource("k")
    source.sync(session.full_chat_history, session.arrived_at)
    texts = {m.id: session.arrived_at.get(m.id or "", "") for m in session.full_chat_history}
    plain = MessageSource("k")
    plain.sync(session.full_chat_history, dict(texts))  # the same stamps as a dict of text: compared as text
    for since, until in [("2026-01-01", None), ("2025-12-31T23:59:59.9", "2026-01-01T00:00:01"), ("", "~"), ("2025-12-31 z", None)]:
        assert source.rank("", ["alpha"], 1000, since=since, until=until) == plain.rank("", ["alpha"], 1000, since=since, until=until)


def test_a_loaded_session_keeps_its_stamps_in_its_records_and_its_search(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    session = _session(monkeypatch, 60, step_ns=11_000_000)
    session.arrived_at["m5"] = "2025-12-31 odd"  # an older store's form: stays text through a save and a load
    manager = SessionManager(JsonlStore(tmp_path))
    manager.save(session)
    loaded = SessionManager(JsonlStore(tmp_path)).get("k")
    assert loaded is not None
    assert dict(loaded.arrived_at) == dict(session.arrived_at)
    bound = session.arrived_at["m30"]
    assert [h.seq for h in loaded.search("alpha", k=50, since=bound)] == [h.seq for h in session.search("alpha", k=50, since=bound)]
    assert [h.ts for h in loaded.search("alpha", k=50, until=bound)] == [h.ts for h in session.search("alpha", k=50, until=bound)]


def test_an_export_of_the_history_reads_the_stamps_get_reads(monkeypatch: pytest.MonkeyPatch) -> None:
    session = _session(monkeypatch, 30)
    session.arrived_at["m20"] = "2025-12-31 odd"
    del session.arrived_at["m21"]
    history = list(session.full_chat_history)
    for compat in ("nanobot-0.1", "nanobot-0.3"):
        assert session_history(history, session.arrived_at, {}, 0, compat) == session_history(history, dict(session.arrived_at), {}, 0, compat)
    assert session.get_history(compat="nanobot-0.1") == session_history(history, dict(session.arrived_at), {}, 0, "nanobot-0.1")



@pytest.mark.parametrize("kept", [None, 20])
def test_a_settle_while_many_are_read_gives_each_its_own_stamp(monkeypatch: pytest.MonkeyPatch, kept: int | None) -> None:
    """Another thread's clear or load settles the stamps (into the dict by id) while a search or a
    save reads them: each read still gives each message its own stamp (read again)."""
    expected = [stamp_at(START // 1000 + i) for i in range(50)]
    for read in ("texts", "instants"):
        session = _session(monkeypatch, 50)
        stamps, keys, calls = session.arrived_at, [m.id or "" for m in session.full_chat_history], []
        real = Ledger.held_positions

        def racing(ledger: Ledger, ids: list[str], session: Session = session, real: Any = real, calls: list[int] = calls) -> list[int | None]:
            found = real(ledger, ids)
            if not calls:  # the first read races a settle: every number (kept None) or those after 20 into the dict
                calls.append(1)
                history = list(session.full_chat_history)
                session.arrived_at.settle(history, [] if kept is None else history[:kept], kept)
            return found

        monkeypatch.setattr(Ledger, "held_positions", racing)
        if read == "texts":
            assert stamps.texts(keys) == expected
        else:
            numbers = stamps.instants(keys)
            assert [stamp_at(n) if n is not None else stamps.get(k) for k, n in zip(keys, numbers, strict=True)] == expected
        assert calls and stamps.texts(keys) == expected and [stamps.get(k) for k in keys] == expected
        monkeypatch.undo()
