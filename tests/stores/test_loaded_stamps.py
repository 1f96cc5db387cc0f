"""A loaded session's arrival stamps cost what an appended session's do: each is a number by
position (``resize/arrivals.LoadedStamps``, adopted after the restore), read back as the very
text that was stored; a stamp in any other form (an older store's, an import's, one set by hand)
stays in the dict as stored. Eager and lazy loads, reloads, appends after a load (every store)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from langchain_core.messages import AIMessage, HumanMessage, SystemMessage
import pytest
from stores_util import BACKENDS, fresh_tenant, make_store

from session_graph import Session
from session_graph.resize.arrivals import _GONE, LoadedStamps
from session_graph.resize.history import LazyHistory
from session_graph.stores import SessionManager, SessionStore
from session_graph.stores.codec import message_record

ODD = {"u3": "2025-01-01T00:00:00Z", "u4": "yesterday", "u5": "2026-02-30T00:00:00.000000Z", "u6": "2026-01-01T00:00:00.000000+00:00",
       "u7": "1969-12-31T23:59:59.999999Z", "u8": "", "u9": "2026-01-01T00:00:00.00000\u0661Z"}


@pytest.fixture(params=BACKENDS)
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Any:
    made = make_store(request.param, tmp_path)
    yield made
    made.close()


def _stored(store: SessionStore, tenant: str, turns: int, limit: int | None = None) -> Session:
    manager = SessionManager(store, tenant=tenant)
    session = manager.get_or_create("k")
    session.set_settings("session.resize.every_n_turns", 0)
    if limit is not None:
        session.configure(limit={"chars": limit})
    session.append_message(SystemMessage(content="be brief", id="sys"))
    for i in range(turns):
        session.append_message(HumanMessage(content=f"question {i}".ljust(30, "."), id=f"u{i}"))
        session.append_message(AIMessage(content=f"answer {i}".ljust(30, "."), id=f"a{i}"))
        if limit is not None and session.judge_resize():
            session.resize()
    for key, text in ODD.items():
        session.arrived_at[key] = text  # stored as they are: the load must give them back byte for byte
    manager.save(session)
    return session


def test_an_eager_load_keeps_every_stamp_as_a_number_and_the_odd_ones_as_stored(store: SessionStore) -> None:
    tenant = fresh_tenant()
    original = _stored(store, tenant, 40)
    loaded = SessionManager(store, tenant=tenant).get_or_create("k")
    stamps = loaded.arrived_at
    assert dict(stamps) == dict(original.arrived_at) and len(stamps) == 81
    assert stamps.stamps == ODD and len(stamps.micros) == 81  # only the odd texts are strings in a dict
    assert [stamps[m.id] for m in loaded.full_chat_history] == [original.arrived_at[m.id] for m in original.full_chat_history]


def test_a_lazy_load_keeps_its_held_stamps_by_position_from_the_window(store: SessionStore) -> None:
    tenant = fresh_tenant()
    original = _stored(store, tenant, 300, limit=600)
    loaded = SessionManager(store, tenant=tenant).get_or_create("k")
    history = loaded.full_chat_history
    assert isinstance(history, LazyHistory) and not history.loaded and history.start > 100
    held = [m.id for _, m in history.held()]
    stamps = loaded.arrived_at
    assert stamps.base == history.start and len(stamps.micros) == len(held) - 1
    assert dict(stamps) == {i: original.arrived_at[i] for i in held} and stamps.stamps == {"sys": original.arrived_at["sys"]}
    assert "u3" not in stamps  # the middle's stamps stay in the store, as before
    history.load()
    assert dict(stamps) == {i: original.arrived_at[i] for i in held}  # positions still name the same messages


def test_appends_after_a_load_and_a_reload_of_what_another_writer_added(store: SessionStore) -> None:
    tenant = fresh_tenant()
    _stored(store, tenant, 20)
    mine, other = SessionManager(store, tenant=tenant), SessionManager(store, tenant=tenant)
    session = mine.get_or_create("k")
    session.append_message(HumanMessage(content="mine", id="n0"))
    assert len(session.arrived_at.micros) == 42 and session.arrived_at.base == 0  # the same array, one more by position
    mine.save(session)
    theirs = other.get_or_create("k")
    theirs.append_message(HumanMessage(content="theirs", id="o0"))
    other.save(theirs)
    assert mine.get_or_create("k") is session  # reloaded after the held messages
    assert session.arrived_at.base == 0 and len(session.arrived_at.micros) == 43  # held and read: all by position
    assert session.arrived_at.stamps == ODD  # the held ones stayed numbers (the same message objects at the same positions)
    assert dict(session.arrived_at) == dict(theirs.arrived_at) and session.arrived_at["u4"] == "yesterday"
    session.append_message(AIMessage(content="reply", id="n1"))
    mine.save(session)
    again = SessionManager(store, tenant=tenant).get_or_create("k")
    assert dict(again.arrived_at) == dict(session.arrived_at) and again.arrived_at.stamps == ODD


def _restored(ids: list[str], texts: list[str]) -> Session:
    session = Session("d")
    history = [HumanMessage(content=f"{n}", id=i) for n, i in enumerate(ids)]
    session.restore(session.state.__class__(id="d", full_chat_history=history, current_chat_history=list(history), memo={},
                                            settings=session.state.settings))
    loaded = LoadedStamps()
    for message, text in zip(history, texts, strict=True):
        loaded.write(message.id, message.id, text)
    loaded.finish(history, 0)
    session.arrived_at.adopt(loaded)
    return session


def test_an_id_stored_twice_keeps_its_last_stamp_as_a_dict_did() -> None:
    first, second, third = "2026-01-01T00:00:00.000001Z", "2026-01-01T00:00:00.000002Z", "2026-01-01T00:00:00.000003Z"
    for texts, last in (([first, second, third], third), ([first, second, "odd"], "odd"), (["odd", second, third], third)):
        stamps = _restored(["a", "b", "a"], texts).arrived_at
        assert dict(stamps) == {"a": last, "b": second} and len(stamps) == 2 and sorted(stamps) == ["a", "b"]


def test_a_merge_moves_only_what_it_changed_into_the_dict(store: SessionStore) -> None:
    tenant = fresh_tenant()
    mine, other = SessionManager(store, tenant=tenant), SessionManager(store, tenant=tenant)
    session = mine.get_or_create("k")
    session.set_settings("session.resize.every_n_turns", 0)
    for i in range(1_200):  # long enough for the tail merge (the session's own list spliced in place)
        session.append_message((HumanMessage if i % 2 == 0 else AIMessage)(content=f"s {i}", id=f"s{i}"))
    mine.save(session)
    theirs = other.get_or_create("k")
    theirs.append_message(HumanMessage(content="theirs", id="o0"))
    other.save(theirs)
    session.append_message(HumanMessage(content="mine", id="n0"))
    before = dict(session.arrived_at)
    mine.save(session)  # merges theirs in before my unsaved message
    stamps = session.arrived_at
    assert [m.id for m in session.full_chat_history][-2:] == ["o0", "n0"]
    assert dict(stamps) == {**before, "o0": theirs.arrived_at["o0"]} and len(stamps) == 1_202
    assert set(stamps.stamps) <= {"o0", "n0"}  # the 1,200 shared ones stayed numbers by position
    session.append_message(AIMessage(content="reply", id="r0"))
    assert stamps["r0"] and len(stamps) == 1_203 and set(stamps.stamps) <= {"o0", "n0"}


def test_a_store_whose_every_stamp_is_in_another_form_loads_them_as_stored(store: SessionStore) -> None:
    tenant = fresh_tenant()
    messages = [HumanMessage(content=f"q {i}", id=f"q{i}") for i in range(50)]
    store.write(tenant, "old", [message_record(m, "2026-11-22T00:00:00Z") for m in messages], {"updated_at": "2026-11-22T00:00:00Z", "window": []})
    stamps = SessionManager(store, tenant=tenant).get_or_create("old").arrived_at
    assert dict(stamps) == {m.id: "2026-11-22T00:00:00Z" for m in messages} and len(stamps) == 50
    assert list(stamps.micros) == [_GONE] * 50 and len(stamps.stamps) == 50
