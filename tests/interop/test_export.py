"""JSON/YAML export and import."""

from __future__ import annotations

import json
from typing import Any

from conftest import chat
from langchain_core.messages import AIMessage
import pytest
import yaml

from session_graph import DocumentError, DocumentTypeError, Session

KEYS = {"id", "memo", "full_chat_history", "current_chat_history", "settings", "turns", "last_resize_turn", "memo_cursor"}


def rich_session() -> Session:
    session = Session("s-1").use_lite(messages=4)
    session.set_settings("session.custom.note", "ünïcode ✓")
    session.append_message({"role": "system", "content": "be brief"})
    session.append_message({"role": "user", "name": "ann", "content": [
        {"type": "text", "text": "look"}, {"type": "image_url", "image_url": {"url": "https://x.test/a.png"}}]})
    session.append_message(AIMessage(content="", tool_calls=[{"id": "c1", "name": "f", "args": {"q": [1, 2]}}],
                                      response_metadata={"model_name": "m"}, usage_metadata={"input_tokens": 3, "output_tokens": 4, "total_tokens": 7}))
    session.append_message({"role": "tool", "tool_call_id": "c1", "name": "f", "content": "result"})
    chat(session, 3)
    session.resize()
    session.memo["facts"] = {"likes": ["tea"]}
    return session


@pytest.mark.parametrize("fmt", ["json", "yaml"])
def test_round_trip_keeps_every_field(fmt: str) -> None:
    session = rich_session()
    text = session.to_json() if fmt == "json" else session.to_yaml()
    data = json.loads(text) if fmt == "json" else yaml.safe_load(text)
    assert set(data) == KEYS | {"schema", "trace"} and data["schema"] == 1  # the resize made a trace record
    assert set(data["settings"]) == {"session"}  # only the session's own settings
    loaded = Session.from_json(text) if fmt == "json" else Session.from_yaml(text)
    assert loaded.id == "s-1"
    assert loaded.full_chat_history == session.full_chat_history
    assert loaded.current_chat_history == session.current_chat_history
    assert loaded.memo == session.memo
    assert loaded.settings == session.settings
    assert (loaded.turns, loaded.last_resize_turn, loaded.memo_cursor) == (session.turns, session.last_resize_turn, session.memo_cursor)
    assert loaded.window_totals == session.window_totals
    assert loaded.trace.records() == session.trace.records() and len(loaded.trace) == 1
    call = loaded.full_chat_history[2]
    assert call.tool_calls[0]["args"] == {"q": [1, 2]} and call.usage_metadata["total_tokens"] == 7
    assert loaded.full_chat_history[1].name == "ann"
    # the window shares the history's message objects instead of holding copies
    assert all(any(m is f for f in loaded.full_chat_history) for m in loaded.current_chat_history)
    assert (loaded.to_json() if fmt == "json" else loaded.to_yaml()) == text


def test_a_loaded_session_carries_on_like_the_original() -> None:
    original = rich_session()
    copy = Session.from_json(original.to_json())
    for session in (original, copy):
        chat(session, 4, start=10)
        session.resize()
    assert [m.content for m in copy.current_chat_history] == [m.content for m in original.current_chat_history]
    assert copy.memo == original.memo


@pytest.mark.parametrize("value", ["[1, 2]", '"text"', "42", "null"])
def test_non_dict_documents_are_type_errors(value: str) -> None:
    session = chat(Session(), 1)
    before = session.to_json()
    with pytest.raises(TypeError) as caught:
        session.load_json(value)
    assert isinstance(caught.value, DocumentTypeError)
    with pytest.raises(TypeError):
        session.load_yaml(value)
    assert session.to_json() == before


@pytest.mark.parametrize(
    ("change", "words"),
    [
        ({"memo": []}, "'memo' must be a dict"),
        ({"full_chat_history": {"a": 1}}, "must be a list of messages"),
        ({"full_chat_history": [{"role": "user", "content": "x"}]}, "full_chat_history\\[0\\] must be a dict like"),
        ({"full_chat_history": [{"type": "martian", "data": {"content": "x"}}]}, "not a valid 'martian' message"),
        ({"turns": -1}, "'turns' must be a whole number"),
        ({"memo_cursor": 99}, "full history has only"),
        ({"last_resize_turn": 50}, "after 'turns'"),
        ({"settings": {"session": {"mode": "heavy"}}}, "'lite', 'memo' or 'summary'"),
        ({"settings": {"provider": {"api_key": "sk"}}}, "outside the 'session.' namespace"),
        ({"id": 7}, "'id' must be a non-empty string"),
    ],
)
def test_malformed_documents_fail_clearly_and_change_nothing(change: dict[str, Any], words: str) -> None:
    session = rich_session()
    before = session.to_json()
    data = {**json.loads(before), **change}
    with pytest.raises(DocumentError, match=words):
        session.load_json(json.dumps(data))
    assert session.to_json() == before


def test_broken_text_fails_clearly() -> None:
    session = Session()
    with pytest.raises(DocumentError, match="not valid JSON"):
        session.load_json('{"id": ')
    with pytest.raises(DocumentError, match="not valid YAML"):
        session.load_yaml("id: [unclosed")
    with pytest.raises(TypeError, match="expects JSON text"):
        session.load_json(b"{}".decode() and 42)  # type: ignore[arg-type]


def test_yaml_import_is_safe() -> None:
    with pytest.raises(DocumentError):
        Session().load_yaml("!!python/object/apply:os.system ['echo owned']")
