"""Parts <-> langchain-core messages, add_message / update_tool_part / parts / used, and a provider-safe view."""

from __future__ import annotations

import json
from pathlib import Path

from langchain_core.messages import AIMessage, HumanMessage, ToolMessage, convert_to_openai_messages
import pytest

from session_graph import MessageError, Session, SessionManager
from session_graph.memory import ContextPart, TextPart, ToolPart
from session_graph.memory.parts import dumps_line, line_to_messages, messages_to_line

GOLDEN = (Path(__file__).parents[1] / "snapshots" / "openviking_lines.jsonl").read_text().splitlines()


@pytest.mark.parametrize("store", ["jsonl", "sqlite"])
def test_golden_openviking_lines_round_trip_byte_identical_through_a_store(store: str, tmp_path: Path) -> None:
    target = tmp_path / ("s" if store == "jsonl" else "s.db")
    manager = SessionManager(target)
    session = manager.get_or_create("chat_001")
    for raw in GOLDEN:
        for message in line_to_messages(json.loads(raw)):
            session.append_message(message)
    manager.save(session)
    loaded = SessionManager(target).get_or_create("chat_001")
    history = loaded.full_chat_history
    lines = [dumps_line(messages_to_line(m, {r.tool_call_id: r for r in history if isinstance(r, ToolMessage)}))
             for m in history if not isinstance(m, ToolMessage)]
    assert lines == GOLDEN


def test_parts_map_onto_messages_losslessly() -> None:
    session = Session("chat_001")
    user = session.add_message("user", [TextPart("Why is CI hanging?"), ContextPart(
        uri="memory://user/alice/preferences/tests", context_type="memory", abstract="Prefers pytest-asyncio strict mode")])
    ai = session.add_message("assistant", [TextPart("Let me look."), ToolPart(tool_id="call_1", tool_name="grep", tool_input={"q": "loop"}),
                                           ToolPart(tool_id="call_2", tool_name="ls", tool_input=None)])
    assert isinstance(user, HumanMessage) and isinstance(ai, AIMessage)
    assert [c["id"] for c in ai.tool_calls] == ["call_1", "call_2"]
    assert user.content[1] == {"type": "text", "text": "Prefers pytest-asyncio strict mode", "extras": {"session_graph": {
        "part": "context", "uri": "memory://user/alice/preferences/tests", "context_type": "memory"}}}
    result = session.update_tool_part(ai.id, "call_1", output="tests/conftest.py:12")
    assert session.full_chat_history[-1] is result and result.status == "success"
    parts = session.parts(ai)
    assert parts[1] == ToolPart(tool_id="call_1", tool_name="grep", tool_input={"q": "loop"}, tool_output="tests/conftest.py:12",
                                tool_status="completed")
    assert parts[2].tool_input is None and parts[2].tool_status == "pending"
    assert session.parts(user)[1].uri == "memory://user/alice/preferences/tests"
    assert session.parts(HumanMessage(content="plain")) == [TextPart("plain")]
    assert session.parts(result)[0].tool_output == "tests/conftest.py:12"
    session.update_tool_part(ai.id, "call_2", output="boom", status="error")
    assert session.parts(ai)[2].tool_status == "error"


def test_no_extras_or_non_standard_block_reaches_a_provider() -> None:
    session = Session()
    session.append_message({"role": "system", "content": "be brief"})
    for raw in GOLDEN:
        for message in line_to_messages(json.loads(raw)):
            session.append_message(message)
    view = session.view()
    for message in view.messages:
        for block in message.content if isinstance(message.content, list) else []:
            assert "extras" not in block and block.get("type") != "non_standard"
    assert any("extras" in b for m in session.full_chat_history if isinstance(m.content, list) for b in m.content)  # history keeps them
    assert "extras" not in json.dumps(convert_to_openai_messages(view.messages))


def test_bad_parts_roles_and_tool_updates_are_clear_errors_and_append_nothing() -> None:
    session = Session()
    ai = session.add_message("assistant", [ToolPart(tool_id="c1", tool_name="grep", tool_input={})])
    before = list(session.full_chat_history)
    for role, parts, culprit in (
        ("system", [TextPart("x")], "role 'user' or 'assistant'"),
        ("tool", [TextPart("x")], "role"),
        ("user", [ToolPart(tool_id="c", tool_name="t")], "belong to assistant"),
        ("user", "hello", "list of TextPart"),
        ("user", [TextPart("ok"), 42], "parts\\[1\\]"),
        ("user", [ContextPart(uri="")], "non-empty uri"),
        ("user", [ContextPart(uri="u", context_type="doc")], "context_type"),  # type: ignore[arg-type]
        ("assistant", [ToolPart(tool_id="c", tool_name="t"), ToolPart(tool_id="c", tool_name="t")], "repeats tool_id"),
        ("assistant", [ToolPart(tool_id="c", tool_name="t", tool_status="done")], "tool_status"),  # type: ignore[arg-type]
    ):
        with pytest.raises(MessageError, match=culprit):
            session.add_message(role, parts)
    for args, culprit in (((ai.id, "nope", "x"), "no tool call 'nope'"), (("msg_x", "c1", "x"), "no message"),
                          ((ai.id, "c1", "x", "running"), "'completed' or 'error'"), ((ai.id, "c1", 3), "string")):
        with pytest.raises(MessageError, match=culprit):
            session.update_tool_part(*args)
    assert session.full_chat_history == before
    session.update_tool_part(ai.id, "c1", "done")
    with pytest.raises(MessageError, match="already has its result"):
        session.update_tool_part(ai.id, "c1", "again")
    session.add_message("user", [TextPart("next")])
    late = session.add_message("assistant", [ToolPart(tool_id="c2", tool_name="t")])
    session.add_message("user", [TextPart("moved on")])
    with pytest.raises(MessageError, match="moved on"):
        session.update_tool_part(late.id, "c2", "too late")


def test_used_records_are_validated_saved_and_survive_a_restart(tmp_path: Path) -> None:
    manager = SessionManager(tmp_path)
    session = manager.get_or_create("k")
    session.add_message("user", [TextPart("hi")])
    for kwargs, culprit in (({}, "needs contexts"), ({"contexts": "memory://x"}, "list of non-empty"), ({"contexts": [""]}, "non-empty"),
                            ({"skill": {"input": 1}}, "'uri'"), ({"skill": {"uri": "s", "oops": 1}}, "remove \\['oops'\\]"),
                            ({"skill": {"uri": "s", "success": "yes"}}, "True or False"),
                            ({"skill": {"uri": "s", "input": {1, 2}}}, "JSON data"),
                            ({"contexts": ["ok"], "skill": {"uri": ""}}, "'uri'")):
        with pytest.raises(MessageError, match=culprit):
            session.used(**kwargs)
    assert session.state.usage == ()
    session.used(contexts=["memory://user/alice/preferences/tests", "memory://user/alice/preferences/tests"],
                 skill={"uri": "skill://grep", "input": {"q": 1}, "output": "ok", "success": False})
    manager.save(session)
    loaded = SessionManager(tmp_path).get_or_create("k")
    assert [(r["type"], r["uri"], r["success"]) for r in loaded.state.usage] == [
        ("context", "memory://user/alice/preferences/tests", None), ("skill", "skill://grep", False)]
    assert loaded.state.usage == session.state.usage
    assert Session.from_json(session.to_json()).state.usage == session.state.usage
