"""``Session.arrived_at`` (``resize/arrivals.py``): an appended message's stamp is a number kept by
position, found through the ledger's one record per message; the mapping behaves as the dict it
replaced, and every stamp stays with its message when the history is replaced, reordered,
recounted or assigned."""

from __future__ import annotations

from array import array
import copy
import dataclasses
import json
from pathlib import Path
import pickle
import random
import time

from langchain_core.messages import AIMessage, HumanMessage
import pytest

from session_graph import Session
from session_graph._base.ids import micros_of, micros_of_many, stamp_at, utc_now
from session_graph.stores import JsonlStore, SessionManager, SqliteStore


def _clocked(monkeypatch: pytest.MonkeyPatch, count: int, start: int = 1_767_225_599_999_990_000) -> Session:
    """A session of ``count`` messages appended one microsecond apart from ``start`` (ns)."""
    ticks = iter(range(start, start + 10_000_000_000, 1_000))
    monkeypatch.setattr(time, "time_ns", lambda: next(ticks))
    session = Session("k")
    session.set_settings("session.resize.every_n_turns", 0)
    for i in range(count):
        session.append_message((HumanMessage if i % 2 == 0 else AIMessage)(content=f"message {i}", id=f"m{i}"))
    return session


def _expected(count: int, start: int = 1_767_225_599_999_990_000, prefix: str = "m") -> dict[str, str]:
    return {f"{prefix}{i}": stamp_at(start // 1000 + i) for i in range(count)}


def test_a_stamp_reads_as_utc_now_made_it(monkeypatch: pytest.MonkeyPatch) -> None:
    for micros in (0, 999, 1_000, 1_767_225_599_999_999, 1_767_225_600_000_000, 4_102_444_800_123_456):
        text = stamp_at(micros)
        seconds, rest = divmod(micros, 1_000_000)
        assert text == time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(seconds)) + f".{rest:06d}Z"
        monkeypatch.setattr(time, "time_ns", lambda micros=micros: micros * 1000 + 999)
        assert utc_now() == text


def test_the_mapping_behaves_as_a_dict(monkeypatch: pytest.MonkeyPatch) -> None:
    session = _clocked(monkeypatch, 6)
    stamps = session.arrived_at
    expected = _expected(6)
    assert stamps == expected and dict(stamps) == expected and len(stamps) == 6 and list(stamps) == list(expected)
    assert stamps["m5"] == expected["m5"] and stamps.get("m5") == expected["m5"] and "m5" in stamps
    assert stamps.get("nope") is None and stamps.get("nope", "") == "" and "nope" not in stamps and 5 not in stamps
    with pytest.raises(KeyError):
        stamps["nope"]
    stamps["m2"] = "2020-01-01T00:00:00.000000Z"  # set by hand over an appended stamp
    stamps["x"] = "2021-01-01T00:00:00.000000Z"
    assert stamps["m2"] == "2020-01-01T00:00:00.000000Z" and len(stamps) == 7 and stamps["x"].startswith("2021")
    del stamps["m3"]
    del stamps["m2"]
    with pytest.raises(KeyError):
        del stamps["m3"]
    assert set(stamps) == {"m0", "m1", "m4", "m5", "x"} and len(stamps) == 5
    stamps.update({"m0": "2022-01-01T00:00:00.000000Z"})
    assert stamps["m0"].startswith("2022") and {**stamps}["m0"].startswith("2022") and len({**stamps}) == 5
    assert repr(stamps) == repr(dict(stamps))


def test_stamps_stay_with_their_messages_when_the_history_is_replaced(monkeypatch: pytest.MonkeyPatch) -> None:
    session = _clocked(monkeypatch, 8)
    expected = _expected(8)
    state = session.state
    reordered = [*state.full_chat_history[:2], *reversed(state.full_chat_history[2:])]
    session.restore(dataclasses.replace(state, full_chat_history=reordered, current_chat_history=list(reordered)))
    assert session.arrived_at == expected  # settled by id before the positions moved
    session.append_message(HumanMessage(content="later", id="later"))
    assert session.arrived_at["later"] == stamp_at(1_767_225_599_999_990 + 8) and len(session.arrived_at) == 9
    session.set_token_counter(lambda text: len(text.split()))  # the ledger's entries renewed: stamps found all the same
    session.append_message(HumanMessage(content="after the swap", id="swap"))
    assert session.arrived_at == {**expected, "later": stamp_at(1_767_225_599_999_998), "swap": stamp_at(1_767_225_599_999_999)}


def test_a_dropped_id_appended_again_gets_its_new_stamp(monkeypatch: pytest.MonkeyPatch) -> None:
    session = _clocked(monkeypatch, 6)
    state = session.state
    session.restore(dataclasses.replace(state, full_chat_history=list(state.full_chat_history[:3]),
                                        current_chat_history=list(state.current_chat_history[:3])))
    assert session.arrived_at == _expected(6)  # stamps are not dropped with their messages (as before)
    session.append_message(HumanMessage(content="again", id="m4"))
    assert session.arrived_at["m4"] == stamp_at(1_767_225_599_999_990 + 6) and len(session.arrived_at) == 6


def test_assigning_replaces_every_stamp_and_the_object_stays(monkeypatch: pytest.MonkeyPatch) -> None:
    session = _clocked(monkeypatch, 4)
    stamps = session.arrived_at
    session.arrived_at = session.arrived_at  # itself: read whole first
    assert session.arrived_at is stamps and stamps == _expected(4)
    loaded = {"a": "2026-01-01T00:00:00.000000Z"}
    session.arrived_at = loaded
    assert session.arrived_at is stamps and stamps == loaded and "m0" not in stamps
    session.append_message(HumanMessage(content="b", id="b"))
    assert set(stamps) == {"a", "b"} and len(stamps) == 2


def test_a_clear_keeps_the_stamps_of_what_it_dropped(monkeypatch: pytest.MonkeyPatch) -> None:
    session = _clocked(monkeypatch, 3)
    session.clear()
    assert session.arrived_at == _expected(3)
    session.append_message(HumanMessage(content="new", id="n0"))
    assert set(session.arrived_at) == {"m0", "m1", "m2", "n0"}


@pytest.mark.parametrize("kind", ["jsonl", "sqlite"])
def test_stamps_survive_merges_that_move_my_unsaved_messages(kind: str, tmp_path: Path) -> None:
    """Two writers on one key: each save of mine merges theirs in before my unsaved messages (the
    merge rearranges my list in place, the ledger takes its index over): every stamp stays with its
    message, in the session and in what the store holds."""
    make = (lambda: JsonlStore(tmp_path / "j", fsync=False)) if kind == "jsonl" else (lambda: SqliteStore(tmp_path / "s.db"))
    mine, other = SessionManager(make()), SessionManager(make())
    session = mine.get_or_create("k")
    session.set_settings("session.resize.every_n_turns", 0)
    for i in range(1_200):  # long enough for the tail merge and the index take-over
        session.append_message((HumanMessage if i % 2 == 0 else AIMessage)(content=f"s {i}", id=f"s{i}"))
    mine.save(session)
    for turn in range(3):
        theirs = other.get_or_create("k")
        theirs.append_message(HumanMessage(content=f"theirs {turn}", id=f"o{turn}"))
        other.save(theirs)
        session.append_message(HumanMessage(content=f"mine {turn}", id=f"n{turn}"))
        session.append_message(AIMessage(content=f"reply {turn}", id=f"r{turn}"))
        before = dict(session.arrived_at)
        if turn == 1:
            assert mine.get_or_create("k") is session  # a get that merges, in place
        mine.save(session)
        after = session.arrived_at
        assert all(after[i] == stamp for i, stamp in before.items())  # mine kept, each with its message
        assert after[f"o{turn}"] == theirs.arrived_at[f"o{turn}"]  # theirs adopted with their stamps
        assert [m.id for m in session.full_chat_history][-3:] == [f"o{turn}", f"n{turn}", f"r{turn}"]
    stored = SessionManager(make()).get("k")
    assert stored is not None and dict(stored.arrived_at) == dict(session.arrived_at)


def test_a_stamp_in_utc_now_form_reads_back_to_its_number_and_no_other_text_does() -> None:
    for micros in (0, 59_999_999, 1_767_225_599_999_999, 1_767_225_600_000_000, 4_102_444_799_999_999, 253_402_300_799_999_999):
        assert micros_of(stamp_at(micros)) == micros
    assert micros_of(utc_now()) is not None
    for odd in ("", "yesterday", "2026-01-01T00:00:00Z", "2026-01-01T00:00:00.000000+00:00", "2026-13-01T00:00:00.000000Z",
                "2026-02-30T00:00:00.000000Z", "2026-01-01T24:00:00.000000Z", "2026-01-01T00:60:00.000000Z",
                "2026-01-01T00:00:60.000000Z", "1969-12-31T23:59:59.999999Z", "2026-01-01 00:00:00.000000Z",
                "2026-01-01T00:00:00.+00000Z", "2026-01-01T00:00:00.0000 1Z", "2026-01-01T00:00:00.00000\u0661Z",
                "\uff12026-01-01T00:00:00.000000Z", "+026-01-01T00:00:00.000000Z", "2026-1-01T00:00:00.0000000Z"):
        assert micros_of(odd) is None, odd


def test_the_mapping_copies_pickles_and_serialises_as_the_dict_it_replaced(monkeypatch: pytest.MonkeyPatch) -> None:
    session = _clocked(monkeypatch, 4)
    stamps, expected = session.arrived_at, _expected(4)
    for made in (stamps.copy(), copy.copy(stamps), copy.deepcopy(stamps), pickle.loads(pickle.dumps(stamps)), stamps | {}, {} | stamps):
        assert type(made) is dict and made == expected  # a plain dict of the stamps, not the session behind them
    assert json.loads(json.dumps(stamps.copy())) == expected and json.loads(json.dumps(dict(stamps))) == expected
    with pytest.raises(TypeError, match="not JSON serializable"):
        json.dumps(stamps)  # a Mapping, not a dict (the README says: dict(session.arrived_at))
    assert stamps == expected and expected == stamps and stamps != {} and (stamps | {"x": "y"})["x"] == "y"
    stamps |= {"x": "y"}
    assert stamps["x"] == "y" and session.arrived_at is stamps
    stamps.clear()
    assert len(stamps) == 0 and dict(stamps) == {} and session.arrived_at is stamps
    session.append_message(HumanMessage(content="after", id="after"))
    assert list(stamps) == ["after"]


def test_stamps_read_all_at_once_are_the_ones_read_one_by_one() -> None:
    rng = random.Random(25)
    stamps = [stamp_at(rng.randrange(0, 253_402_300_799_999_999)) for _ in range(2_000)]
    stamps += [stamp_at(1_795_000_000_000_000 + i * 7_000_123) for i in range(2_000)]  # a session's: minutes and days shared
    stamps += [f"2026-01-01T{hour:02d}:59:59.999999Z" for hour in range(24)] + ["9999-12-31T23:59:59.999999Z"]
    assert list(micros_of_many("".join(stamps).encode(), len(stamps)) or ()) == [micros_of(s) for s in stamps]
    assert micros_of_many(b"", 0) == array("q") and micros_of_many(b"x", 0) is None and micros_of_many(b"x" * 27, 2) is None
    good = stamp_at(1_795_000_000_000_000)
    for odd in ("2026-02-30T00:00:00.000000Z", "2026-01-01T24:00:00.000000Z", "2026-01-01T30:00:00.000000Z", "2026-01-01T00:60:00.000000Z",
                "2026-01-01T00:00:60.000000Z", "1969-12-31T23:59:59.999999Z", "2026-01-01 00:00:00.000000Z", "2026-13-01T00:00:00.000000Z",
                "0000-01-01T00:00:00.000000Z", "2026-00-01T00:00:00.000000Z", "2026-01-00T00:00:00.000000Z", "2026-01-01T00:00:00.00000aZ",
                "2026-01-01T00:00:00.000000z", "2026-01-01T00:00:00-000000Z", "2026-01-01T00:00:00.0000-0Z"):
        assert micros_of(odd) is None and micros_of_many((good + odd + good).encode(), 3) is None, odd  # then read one by one
