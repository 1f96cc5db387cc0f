"""append_message: what it accepts, what it keeps, what it refuses."""

from __future__ import annotations

from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage
import pytest

from session_graph import MessageError, Session


def test_openai_dicts_become_langchain_messages_with_every_field() -> None:
    session = Session()
    session.append_message({"role": "system", "content": "be brief"})
    session.append_message(
        {"role": "user", "name": "ann", "id": "u-1", "content": [
            {"type": "text", "text": "look"},
            {"type": "image_url", "image_url": {"url": "https://x.test/a.png", "detail": "low"}},
        ]}
    )
    session.append_message({"role": "assistant", "content": None, "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "lookup", "arguments": '{"q": "a"}'}},
        {"id": "c2", "type": "function", "function": {"name": "lookup", "arguments": '{"q": "b"}'}},
    ], "reasoning_content": "thinking"})
    session.append_message({"role": "tool", "tool_call_id": "c1", "name": "lookup", "content": "A"})
    session.append_message({"role": "tool", "tool_call_id": "c2", "content": [{"type": "text", "text": "B"}]})
    system, user, call, result, result2 = session.full_chat_history
    assert isinstance(system, SystemMessage)
    assert isinstance(user, HumanMessage) and user.name == "ann" and user.id == "u-1"
    assert user.content[1] == {"type": "image_url", "image_url": {"url": "https://x.test/a.png", "detail": "low"}}
    assert isinstance(call, AIMessage)
    assert [(c["id"], c["name"], c["args"]) for c in call.tool_calls] == [("c1", "lookup", {"q": "a"}), ("c2", "lookup", {"q": "b"})]
    assert call.additional_kwargs["reasoning_content"] == "thinking"
    assert isinstance(result, ToolMessage) and result.tool_call_id == "c1" and result.name == "lookup"
    assert result2.content == [{"type": "text", "text": "B"}]
    assert all(m.id for m in session.full_chat_history)
    assert len({m.id for m in session.full_chat_history}) == 5
    assert session.current_chat_history == session.full_chat_history


def test_langchain_messages_are_kept_as_given_and_get_an_id_when_missing() -> None:
    session = Session()
    given = AIMessage(content="hi", id="keep-me", response_metadata={"model_name": "m"})
    session.append_message(given)
    session.append_message(HumanMessage(content="no id"))
    assert session.full_chat_history[0] is given
    assert session.full_chat_history[1].id and session.full_chat_history[1].content == "no id"


def test_only_assistant_replies_count_turns() -> None:
    session = Session()
    session.append_message({"role": "user", "content": "q"})
    session.append_message({"role": "assistant", "content": "", "tool_calls": [{"id": "c", "name": "f", "args": {}}]})
    session.append_message({"role": "tool", "tool_call_id": "c", "content": "r"})
    assert session.turns == 0
    session.append_message({"role": "assistant", "content": "done"})
    assert session.turns == 1


@pytest.mark.parametrize(
    ("bad", "words"),
    [
        ({"role": "wizard", "content": "x"}, "role 'wizard'"),
        ({"role": "user"}, "no 'content'"),
        ({"content": "x"}, "role None"),
        ({"role": "user", "content": 42}, "content must be a string or a list"),
        ({"role": "user", "content": [{"text": "no type"}]}, "content[0]"),
        ({"role": "tool", "content": "r"}, "tool_call_id"),
        ({"role": "assistant", "content": "x", "tool_calls": "nope"}, "'tool_calls' must be a list"),
        ({"role": "assistant", "content": "x", "tool_calls": [{"function": {"name": "f", "arguments": "{bad"}}]}, "not JSON"),
        ({"role": "user", "content": "x", "name": 3}, "non-string 'name'"),
        ("just text", "got str"),
        (None, "got NoneType"),
    ],
)
def test_bad_input_raises_a_clear_error_and_changes_nothing(bad: object, words: str) -> None:
    session = Session()
    session.append_message({"role": "user", "content": "kept"})
    before = (list(session.full_chat_history), list(session.current_chat_history), session.turns, session.window_totals)
    with pytest.raises(MessageError, match=words.replace("(", r"\(").replace("[", r"\[")):
        session.append_message(bad)  # type: ignore[arg-type]
    assert (list(session.full_chat_history), list(session.current_chat_history), session.turns, session.window_totals) == before


def test_the_same_message_cannot_be_appended_twice() -> None:
    session = Session()
    message = HumanMessage(content="once", id="m1")
    session.append_message(message)
    with pytest.raises(MessageError, match="already in session"):
        session.append_message(message)
    assert len(session.full_chat_history) == 1
