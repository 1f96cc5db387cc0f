"""The resize trace: what each resize records, how it is kept, saved, exported and logged."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
import itertools
import json
import logging
from pathlib import Path

from conftest import Api, chat, fake_model, memo_reply
from langchain_core.messages import AIMessage, HumanMessage
import pytest
from test_graph import check_snapshot

from session_graph import (
    DocumentError,
    HandlerResultError,
    MemoUpdateError,
    ResizeTrace,
    Session,
    SessionManager,
    build_resize_graph,
)
from session_graph.resize.trace_recording import TraceRecorder


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """A fixed clock: every perf_counter reading is 1 ms after the last, every timestamp a step."""
    ticks = itertools.count()
    stamps = itertools.count()
    monkeypatch.setattr("session_graph.resize.trace_recording.perf_counter", lambda: next(ticks) / 1000)
    monkeypatch.setattr("session_graph.resize.trace_recording.utc_now", lambda: f"2026-01-01T00:00:{next(stamps):02d}.000000Z")
    yield


def memo_session_with_every_kind_of_resize(api: Api) -> Session:
    """Memo mode, a token counter and a model: a lite fold, a deep fold in two chunks, a model
    failure that keeps its progress, and a custom handler that fails and changes nothing."""
    model = fake_model(*(memo_reply({"likes": "tea", "folds": list(range(n))}) for n in range(1, 9)))
    session = Session("trace-1", model=model).use_memo(chars=400, every_n_turns=4)
    session.set_settings("session.memo.chunk_tokens", 40)
    chat(session, 4, size=30)
    api.resize(session)  # every 4 turns: lite, folds what waits
    chat(session, 6, size=30, start=4)
    api.resize(session)  # over 400 chars: deep, in chunks of 160 chars
    chat(session, 2, size=30, start=10)
    model.responses, model.i = ["not json"], 0  # the provider starts answering prose
    with pytest.raises(MemoUpdateError):
        api.resize(session, "deep")  # the model answers prose: the memo keeps what it folded
    session.set_resize_handlers("broken", lambda full, current, memo, settings: None)
    with pytest.raises(HandlerResultError):
        api.resize(session, "broken")
    return session


def test_every_resize_leaves_one_record_snapshot(api: Api, clock: None) -> None:
    session = memo_session_with_every_kind_of_resize(api)
    records = session.trace.records()
    assert [r["seq"] for r in records] == [1, 2, 3, 4]
    first, deep, stopped, failed = records
    assert first["type"] == "lite" and first["route"][:2] == ["judge", "memo_update"]  # lite: no deep_chunk
    assert first["route"][-2:] == ["memo_update", "lite_prune"] and first["model_calls"] == first["route"].count("memo_update")
    assert deep["route"][:3] == ["judge", "attachment_summary", "deep_chunk"] and deep["route"].count("memo_update") >= 2
    assert deep["model_calls"] == deep["route"].count("memo_update") and deep["folded"] > 0
    assert deep["messages_after"] < deep["messages_before"] and deep["context_chars_after"] > deep["context_chars_before"]
    assert stopped["committed"] and stopped["error"].startswith("MemoUpdateError: memo update failed")
    assert not failed["committed"] and failed["error"].startswith("HandlerResultError")
    assert failed["messages_after"] == failed["messages_before"] and failed["route"] == ["judge", "broken"]
    assert all(len(r["route"]) == len(r["node_ms"]) for r in records)
    # what the model was really sent: the prompts' text, counted by the session's model updater
    assert sum(r["sent_chars"] for r in records) == session.handlers.model_updater.sent_chars
    assert sum(r["model_calls"] for r in records) == session.handlers.model_updater.calls
    assert session.resize_events == [r.event() for r in session.trace if r.committed]  # the older view still works
    check_snapshot("trace_records.json", json.dumps(records, indent=1, sort_keys=True) + "\n")


def test_records_are_flat_rows_a_dataframe_takes(api: Api) -> None:
    records = memo_session_with_every_kind_of_resize(api).trace.records()
    assert len({tuple(r) for r in records}) == 1  # the same columns in the same order
    for record in records:
        assert all(isinstance(v, str | int | float | bool | list) or v is None for v in record.values())
        assert json.loads(json.dumps(record)) == record


def test_the_trace_is_bounded_and_keeps_counting() -> None:
    trace = ResizeTrace(limit=3)
    for seq in range(1, 8):  # a record of nothing but its number: missing fields load empty
        trace.add(ResizeTrace.load({"fields": ["seq"], "rows": [[seq]]})[0])
    assert [r.seq for r in trace] == [5, 6, 7] and trace.next_seq == 8 and trace[-1].seq == 7 and trace[:1][0].seq == 5


def test_an_override_of_one_parameter_is_timed_too() -> None:
    seen = []

    def prune_everything(state):  # type: ignore[no-untyped-def]  # the documented signature, without runtime
        seen.append(len(state.current_chat_history))
        return {"current_chat_history": state.current_chat_history[-1:]}

    session = chat(Session().use_lite(messages=2).override_node("lite_prune", prune_everything), 3)
    session.resize()
    assert seen == [6] and session.trace[-1].route == ("judge", "lite_prune")  # lite mode's graph has no memo or summary node
    assert session.trace[-1].messages_after == 1


@pytest.mark.parametrize("how", ["ainvoke", "astream"])
def test_recording_does_not_depend_on_how_the_graph_is_invoked(how: str) -> None:
    """The wrapper sits on the nodes and the recorder rides in the context: any way of running
    the compiled graph, without a session around it, records the same route."""
    session = chat(Session().use_lite(messages=2), 3)
    recorder = TraceRecorder()
    context = recorder.instrument(session.handlers.context(False, session.state, session._ledger, session.settings.resolved()))
    graph = build_resize_graph()

    async def run() -> None:
        if how == "ainvoke":
            await graph.ainvoke(session.state, context=context)
        else:
            async for _ in graph.astream(session.state, context=context, stream_mode="updates"):
                pass

    asyncio.run(run())
    assert [name for name, _ in recorder.nodes] == ["judge", "memo_update", "summary_fold", "lite_prune"]
    assert recorder.decision["type"] == "lite" and all(seconds >= 0 for _, seconds in recorder.nodes)


def test_no_record_when_nothing_is_decided() -> None:
    session = chat(Session(), 1)
    session.resize()
    assert len(session.trace) == 0 and session.resize_events == []


@pytest.mark.parametrize("store", ["dir", "store.db"])
def test_the_trace_is_saved_with_the_session(store: str, tmp_path: Path, api: Api) -> None:
    target = tmp_path / store
    manager = SessionManager(target)
    session = memo_session_with_every_kind_of_resize(api)
    kept = manager.get_or_create("trace-1")
    kept.load_dict(session.to_dict())
    manager.save(kept)
    loaded = SessionManager(target).get("trace-1")
    assert loaded is not None and loaded.trace.records() == session.trace.records()
    loaded.use_lite()  # the reloaded session has no memo model
    loaded.append_message(HumanMessage("one more"))
    loaded.append_message(AIMessage("noted"))
    loaded.resize(force="lite")
    assert loaded.trace[-1].seq == 5  # numbering goes on after a reload


def test_a_damaged_saved_trace_never_keeps_a_session_from_loading(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    manager = SessionManager(tmp_path / "s.db")
    session = chat(manager.get_or_create("k"), 3)
    session.resize(force="lite")
    manager.save(session)
    store = manager.store
    snapshot = store.read("default", "k")
    state = {**snapshot.state, "trace": {"fields": ["seq"], "rows": [["not a number"]]}}
    store.write("default", "k", [], state)
    with caplog.at_level(logging.WARNING, logger="session_graph"):
        loaded = SessionManager(tmp_path / "s.db").get("k")
    assert loaded is not None and len(loaded.full_chat_history) == 6 and len(loaded.trace) == 0
    assert "saved resize trace is damaged" in caplog.text


def test_a_document_with_a_bad_trace_is_refused_and_changes_nothing() -> None:
    session = chat(Session(), 2)
    session.resize(force="lite")
    data = session.to_dict()
    target = chat(Session(), 1)
    before = target.to_dict()
    for bad in ({"fields": ["seq"]}, {"fields": ["seq"], "rows": [[1, 2]]}, {"fields": ["route"], "rows": [[[1]]]}, "x"):
        with pytest.raises(DocumentError, match="trace"):
            target.load_dict({**data, "trace": bad})
        assert target.to_dict() == before


def test_merged_writers_keep_both_traces(tmp_path: Path) -> None:
    one, two = SessionManager(tmp_path / "m.db"), SessionManager(tmp_path / "m.db")
    first = chat(one.get_or_create("k"), 2)
    one.save(first)
    second = two.get_or_create("k")
    first.resize(force="lite")
    one.save(first)
    chat(second, 1, start=5)
    second.resize(force="deep")
    two.save(second)  # merges what the first writer stored
    assert sorted(r.type for r in second.trace) == ["deep", "lite"]


def test_resizes_and_failures_are_logged(caplog: pytest.LogCaptureFixture, broken_model: object) -> None:
    with caplog.at_level(logging.INFO, logger="session_graph"):
        session = chat(Session("log-1").use_lite(messages=2), 3)
        session.resize()
        failing = chat(Session("log-2", model=broken_model).use_memo(messages=2), 3)  # type: ignore[arg-type]
        with pytest.raises(MemoUpdateError):
            failing.resize()
    infos = [r for r in caplog.records if r.levelno == logging.INFO and "log-1" in r.getMessage()]
    assert infos and "resize turn 3: lite (max_keep_messages_count): window 6 -> 2 msgs" in infos[0].getMessage()
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING and "log-2" in r.getMessage()]
    assert warnings and "stopped early" in warnings[0].getMessage() and "provider unavailable" in warnings[0].getMessage()
