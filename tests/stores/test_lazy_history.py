"""Lazy loads: a stored session comes back with its window, memo and counters, and the middle
of its history stays in the store until something reads it; it then behaves exactly as the
list an eager load gives (every store)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from conftest import chat
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage
import pytest
from stores_util import BACKENDS, fresh_tenant, make_store

from session_graph import MessageError, Session, StoreError
from session_graph.resize.history import LazyHistory, is_loaded
from session_graph.stores import SessionManager, SessionStore


def messages(n: int, start: int = 0) -> list[Any]:
    return [(HumanMessage if i % 2 == 0 else AIMessage)(content=f"message {i}", id=f"m{i}") for i in range(start, start + n)]


# -- the sequence itself ------------------------------------------------------------------------
def lazy(n: int = 10, start: int = 6) -> tuple[LazyHistory, list[Any], list[int]]:
    full = messages(n)
    reads: list[int] = []

    def load() -> list[Any]:
        reads.append(1)
        return full[1:start]

    return LazyHistory(full[0], start, full[start:], load), full, reads


def test_what_is_held_is_read_without_the_store() -> None:
    history, full, reads = lazy()
    assert len(history) == 10 and history[0] is full[0] and history[-1] is full[-1] and history[6] is full[6]
    assert history[6:] == full[6:] and history[-2:] == full[-2:] and history[8:3] == []
    assert list(history.held()) == [(0, full[0]), *((i, full[i]) for i in range(6, 10))]
    extra = HumanMessage(content="new", id="new")
    history.append(extra)
    assert len(history) == 11 and history[-1] is extra and reads == [] and not is_loaded(history)


@pytest.mark.parametrize("access", [
    lambda h: h[3], lambda h: h[2:8], lambda h: list(h), lambda h: h[::2], lambda h: h.index(h[-1]),
    lambda h: [*h], lambda h: h + [],  # noqa: RUF005 - the concatenation is what is tested
    lambda h: h[-8],
])
def test_anything_reaching_the_middle_reads_it_once(access: Any) -> None:
    history, full, reads = lazy()
    eager = list(full)
    assert access(history) == access(eager)
    assert reads == [1] and is_loaded(history) and history == eager
    access(history)
    assert reads == [1]


def test_a_middle_that_changed_in_the_store_is_an_error_not_a_wrong_history() -> None:
    full = messages(10)
    history = LazyHistory(full[0], 6, full[6:], lambda: full[1:4])
    with pytest.raises(StoreError, match="load it again"):
        list(history)


def test_ids_of_the_middle_need_not_read_its_messages() -> None:
    full = messages(10)
    reads: list[int] = []
    history = LazyHistory(full[0], 6, full[6:], lambda: reads.append(1) or full[1:6], ids=lambda: [m.id for m in full[1:6]])
    assert history.middle_ids() == ["m1", "m2", "m3", "m4", "m5"] and reads == []


# -- through the stores ---------------------------------------------------------------------------
@pytest.fixture(params=BACKENDS)
def store(request: pytest.FixtureRequest, tmp_path: Path) -> SessionStore:
    made = make_store(request.param, tmp_path)
    yield made
    made.close()


def stored(store: SessionStore, tenant: str, turns: int = 600, memo: bool = False) -> tuple[Session, list[Any]]:
    manager = SessionManager(store, tenant=tenant)
    session = manager.get_or_create("k")
    session.append_message(SystemMessage(content="be brief", id="sys"))
    if memo:
        session.use_memo(chars=600).set_memo_update_handler(
            lambda memo, msgs, attachments, settings: {"folded": [*memo.get("folded", []), *(m.id for m in msgs)]})
    else:
        session.configure(limit={"chars": 600})
    for i in range(turns):
        session.append_message({"role": "user", "content": f"question {i}".ljust(30, "."), "id": f"u{i}"})
        if i % 5 == 0:
            session.append_message(AIMessage(content="", tool_calls=[{"id": f"c{i}", "name": "look", "args": {"i": i}}], id=f"t{i}"))
            session.append_message(ToolMessage(content=f"result {i}", tool_call_id=f"c{i}", name="look", id=f"r{i}"))
        session.append_message({"role": "assistant", "content": f"answer {i}".ljust(30, "."), "id": f"a{i}"})
        if session.judge_resize():
            session.resize()
    manager.save(session)
    return session, list(session.full_chat_history)


def test_a_load_reads_the_window_and_leaves_the_middle_in_the_store(store: SessionStore) -> None:
    tenant = fresh_tenant()
    original, expected = stored(store, tenant)
    loaded = SessionManager(store, tenant=tenant).get_or_create("k")
    history = loaded.full_chat_history
    assert isinstance(history, LazyHistory) and not history.loaded and history.start > len(expected) // 2
    assert len(history) == len(expected) and loaded.current_chat_history == original.current_chat_history
    assert loaded.view().messages == original.view().messages and loaded.state.turns == original.state.turns
    assert history[0] == expected[0]  # the system prompt, held
    assert list(history) == expected and history.loaded  # then paged in, equal to what was saved


def test_a_turn_after_a_lazy_load_never_reads_the_middle(store: SessionStore) -> None:
    tenant = fresh_tenant()
    _, expected = stored(store, tenant)
    manager = SessionManager(store, tenant=tenant)
    session = manager.get_or_create("k")
    chat(session, 3, size=40, start=900)
    if session.judge_resize():
        session.resize()
    with pytest.raises(MessageError, match="already in session"):  # an id from the middle is still refused
        session.append_message({"role": "user", "content": "again", "id": "u3"})
    manager.save(session)
    assert not session.full_chat_history.loaded
    again = SessionManager(store, tenant=tenant).get_or_create("k")
    assert list(again.full_chat_history) == [*expected, *list(session.full_chat_history)[len(expected):]]
    assert again.current_chat_history == session.current_chat_history


def test_a_memo_fold_after_a_lazy_load_folds_what_an_eager_session_folds(store: SessionStore) -> None:
    tenant = fresh_tenant()
    eager, _ = stored(store, tenant, turns=300, memo=True)
    manager = SessionManager(store, tenant=tenant)
    lazy_session = manager.get_or_create("k")
    assert lazy_session.full_chat_history.start <= lazy_session.state.memo_cursor  # the load reads from the memo's cursor
    lazy_session.set_memo_update_handler(
        lambda memo, msgs, attachments, settings: {"folded": [*memo.get("folded", []), *(m.id for m in msgs)]})
    for session in (eager, lazy_session):
        for i in range(4):
            session.append_message({"role": "user", "content": f"late question {i}".ljust(60, "."), "id": f"lu{i}"})
            session.append_message({"role": "assistant", "content": f"late answer {i}".ljust(60, "."), "id": f"la{i}"})
        session.resize(force="deep")
    assert lazy_session.memo_for_model == eager.memo_for_model
    assert lazy_session.current_chat_history == eager.current_chat_history
    folded = lazy_session.memo_for_model["folded"]
    assert len(folded) == len(set(folded)) == len(eager.full_chat_history)  # each message folded once, across the load
    assert not lazy_session.full_chat_history.loaded  # the fold read nothing before the cursor


def test_a_session_cleared_by_another_writer_is_refused_on_paging_in(store: SessionStore) -> None:
    tenant = fresh_tenant()
    stored(store, tenant, turns=200)
    lazy_session = SessionManager(store, tenant=tenant).get_or_create("k")
    other = SessionManager(store, tenant=tenant)
    cleared = other.get_or_create("k").clear()
    chat(cleared, 2)
    other.save(cleared)
    with pytest.raises(StoreError, match="get it again"):
        list(lazy_session.full_chat_history)
    assert len(SessionManager(store, tenant=tenant).get_or_create("k").full_chat_history) == 4  # nothing else changed


def test_a_lazy_writer_merges_with_another_writer(store: SessionStore) -> None:
    tenant = fresh_tenant()
    _, expected = stored(store, tenant, turns=200)
    one, two = SessionManager(store, tenant=tenant), SessionManager(store, tenant=tenant)
    a, b = one.get_or_create("k"), two.get_or_create("k")
    b.append_message({"role": "user", "content": "from b", "id": "b1"})
    two.save(b)
    a.append_message({"role": "user", "content": "from a", "id": "x1"})
    one.save(a)  # a merge: the middle is read outside the store's lock, then the save retries
    final = SessionManager(store, tenant=tenant).get_or_create("k")
    assert [m.id for m in final.full_chat_history] == [*(m.id for m in expected), "b1", "x1"]


def test_a_log_without_offsets_loads_fully_then_gets_them(tmp_path: Path) -> None:
    store = make_store("jsonl", tmp_path)
    tenant = fresh_tenant()
    _, expected = stored(store, tenant, turns=300)
    meta = next(tmp_path.rglob("*.meta.json"))
    document = json.loads(meta.read_text())
    document.pop("offsets")
    meta.write_text(json.dumps(document))  # as an older version wrote it
    manager = SessionManager(store, tenant=tenant)
    session = manager.get_or_create("k")
    assert is_loaded(session.full_chat_history) and list(session.full_chat_history) == expected
    chat(session, 1)
    manager.save(session)  # indexes the log once
    assert json.loads(meta.read_text())["offsets"][0] == [0, 0]
    again = SessionManager(store, tenant=tenant).get_or_create("k")
    assert not is_loaded(again.full_chat_history) and list(again.full_chat_history) == list(session.full_chat_history)


def test_lines_written_after_the_state_are_read_by_a_full_load(tmp_path: Path) -> None:
    store = make_store("jsonl", tmp_path)
    tenant = fresh_tenant()
    _, expected = stored(store, tenant, turns=300)
    log = next(p for p in tmp_path.rglob("*.jsonl") if not p.name.endswith(".quarantine.jsonl"))
    extra = HumanMessage(content="written by a writer that crashed before its state", id="late")
    from session_graph.stores.codec import message_record

    with open(log, "a", encoding="utf-8") as handle:
        handle.write(json.dumps({**message_record(extra, "2026-01-01T00:00:00Z"), "seq": len(expected)}) + "\n")
    session = SessionManager(store, tenant=tenant).get_or_create("k")
    assert list(session.full_chat_history) == [*expected, extra] and session.current_chat_history[-1] == extra
