"""A message loaded from a store is the message made in process, as compact: the same fields,
the same fields set (only what differs from its default: never ``type`` nor ``status="success"``),
its repeated short strings (tool names, statuses) kept once; a load trims the heap last."""

from __future__ import annotations

from pathlib import Path

from langchain_core.messages import AIMessage, ChatMessage, FunctionMessage, HumanMessage, SystemMessage, ToolMessage
import pytest

from session_graph.stores import JsonlStore, SessionManager, SqliteStore
from session_graph.stores.codec import message_record, record_message
import session_graph.stores.session_load as session_load

MADE = [
    HumanMessage(content="hi", id="h1"),
    HumanMessage(content="named", id="h2", name="ann"),
    SystemMessage(content="be brief", id="s1"),
    AIMessage(content="", id="a1", tool_calls=[{"id": "c1", "name": "lookup", "args": {"q": "x"}}]),
    AIMessage(content=[{"type": "text", "text": "parts"}], id="a2", usage_metadata={"input_tokens": 1, "output_tokens": 2,
                                                                                    "total_tokens": 3}),
    ToolMessage(content="found", tool_call_id="c1", name="lookup", id="t1"),
    ToolMessage(content="failed", tool_call_id="c2", status="error", id="t2", artifact={"raw": 1}),
    FunctionMessage(content="{}", name="fn", id="f1"),
    ChatMessage(content="hey", role="critic", id="c1m"),
]


@pytest.mark.parametrize("made", MADE, ids=lambda m: m.id)
def test_a_loaded_message_is_the_one_made_in_process(made: object) -> None:
    loaded = record_message(message_record(made, "2026-11-24T00:00:00Z"), "test")  # type: ignore[arg-type]
    assert type(loaded) is type(made) and loaded == made and loaded.__dict__ == made.__dict__  # type: ignore[attr-defined]
    assert loaded.model_fields_set == made.model_fields_set  # type: ignore[attr-defined]
    assert loaded.model_dump(exclude_unset=True) == made.model_dump(exclude_unset=True)  # type: ignore[attr-defined]


def test_repeated_short_strings_are_kept_once() -> None:
    first, second = (record_message(message_record(m, "2026-11-24T00:00:00Z"), "test")
                     for m in (MADE[5], ToolMessage(content="again", tool_call_id="c9", name="lookup", id="t9")))
    assert first.name is second.name and first.status is second.status  # type: ignore[attr-defined]
    calls = [record_message(message_record(AIMessage(content="", id=f"a{i}", tool_calls=[
        {"id": f"c{i}", "name": "lookup", "args": {}}]), "2026-11-24T00:00:00Z"), "test") for i in range(2)]
    assert calls[0].tool_calls[0]["name"] is calls[1].tool_calls[0]["name"]  # type: ignore[attr-defined]


@pytest.mark.parametrize("kind", ["jsonl", "sqlite"])
def test_a_large_load_trims_the_heap_after_the_load_is_done(kind: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store = JsonlStore(tmp_path / "j", fsync=False) if kind == "jsonl" else SqliteStore(tmp_path / "s.db")
    monkeypatch.setattr(session_load, "TRIM_AFTER", 10)
    manager = SessionManager(store)
    session = manager.get_or_create("k")
    for i in range(12):
        session.append_message(HumanMessage(content=f"m{i}", id=f"m{i}"))
    manager.save(session)
    trims: list[int] = []
    monkeypatch.setattr(session_load, "trim_heap", lambda: trims.append(len(fresh.cache)) or True)
    fresh = SessionManager(store)
    loaded = fresh.get("k")
    assert loaded is not None and [m.id for m in loaded.full_chat_history] == [f"m{i}" for i in range(12)]
    assert trims == [1]  # once, after the session was restored and cached
