"""``Session.append_message``'s one-call check (``storable``) and the ledger's folded id check
refuse what the two-step path refused, with the same errors naming the culprit."""

from __future__ import annotations

from pathlib import Path

from langchain_core.messages import AIMessage, HumanMessage
import pytest

from session_graph import Session
from session_graph.errors import MessageError
from session_graph.messages import check_storable, storable, to_message


def test_not_a_message_is_named() -> None:
    with pytest.raises(MessageError, match=r"langchain-core message or a dict.*got object"):
        Session().append_message(object())  # type: ignore[arg-type]


def test_control_character_in_id_is_refused() -> None:
    with pytest.raises(MessageError, match=r"id with a NUL or control character \('bad\\x00id'\)"):
        Session().append_message(HumanMessage(content="hi", id="bad\x00id"))


def test_lone_surrogate_in_text_is_refused_on_the_fast_path() -> None:
    with pytest.raises(MessageError, match=r"message\.content"):
        Session().append_message(HumanMessage(content="broken \ud800 text", id="s1"))


def test_bad_content_block_is_refused() -> None:
    with pytest.raises(MessageError):
        Session().append_message(HumanMessage(content=[{"type": "text", "text": b"bytes"}], id="b1"))  # type: ignore[list-item]


def test_duplicate_id_is_refused_and_nothing_changes() -> None:
    session = Session()
    session.append_message(HumanMessage(content="first", id="same"))
    revision, totals = session.revision, session.window_totals
    with pytest.raises(MessageError, match="a message with id 'same' is already in session"):
        session.append_message(AIMessage(content="again", id="same"))
    assert session.revision == revision and session.window_totals == totals
    assert [m.content for m in session.full_chat_history] == ["first"]


def test_storable_equals_the_two_step_path() -> None:
    plain = HumanMessage(content="hello", id="h1")
    assert storable(plain) is plain is check_storable(to_message(plain))
    without_id = HumanMessage(content="no id yet")
    given = storable(without_id)
    assert given.id and given.content == "no id yet" and without_id.id is None  # a copy with an id, the input untouched
    from_dict = storable({"role": "assistant", "content": "from a dict"})
    assert isinstance(from_dict, AIMessage) and from_dict.id


@pytest.mark.parametrize(("args", "extra", "culprit"), [
    ({"a": [1, 2, {"b": float("nan")}]}, {}, "message.tool_calls[0].args.a[2].b is nan"),
    ({"a": [1, "ok\ud800"]}, {}, "message.tool_calls[0].args.a[1] holds a lone surrogate"),
    ({"a": {1: 2}}, {}, "message.tool_calls[0].args.a has a key 1 that is not a string"),
    ({"a": {"s": {1, 2}}}, {}, "message.tool_calls[0].args.a.s is a set"),
    ({"a": [b"raw"]}, {}, "message.tool_calls[0].args.a[0] holds raw bytes"),
    ({"d": [[[]]]}, {"x": [float("inf")]}, "message.additional_kwargs.x[0] is inf"),
    # a key is written as text too: accepted, it made every later save of the session fail (UnicodeEncodeError)
    ({"a": {"k\ud800": 1}}, {}, "message.tool_calls[0].args.a has a key 'k\\ud800' holding a lone surrogate"),
    ({}, {"x\udfff": 1}, "message.additional_kwargs has a key 'x\\udfff' holding a lone surrogate"),
])
def test_a_nested_culprit_is_named_by_its_path(args: dict, extra: dict, culprit: str) -> None:
    """The check writes a path only for a container or an error: each culprit still gets its whole path."""
    message = AIMessage(content="", tool_calls=[{"id": "c1", "name": "f", "args": args}], additional_kwargs=extra, id="x")
    with pytest.raises(MessageError) as error:
        Session().append_message(message)
    assert str(error.value).startswith(culprit)


def test_a_refused_key_leaves_the_session_savable(tmp_path: Path) -> None:
    from session_graph.stores import SessionManager

    with SessionManager(tmp_path) as manager:
        session = manager.get_or_create("k")
        with pytest.raises(MessageError, match="lone surrogate"):
            session.append_message(AIMessage(content="x", additional_kwargs={"k\ud800": 1}, id="bad"))
        session.append_message({"role": "user", "content": "still saved"})
        manager.save(session)
    with SessionManager(tmp_path) as again:
        assert [m.text for m in again.get("k").full_chat_history] == ["still saved"]


def test_a_clean_nested_call_passes() -> None:
    args = {"ok": [1, True, None, 2.5, "\u00e9", (1, "t"), {"deep": [[{"x": "y"}]]}]}
    session = Session()
    session.append_message(AIMessage(content="", tool_calls=[{"id": "c1", "name": "f", "args": args}], id="x"))
    assert session.full_chat_history[-1].tool_calls[0]["args"] == args


@pytest.mark.parametrize("bad", [5, b"raw-id", ["a"]])
def test_a_non_string_id_set_after_construction_is_named(bad: object) -> None:
    """pydantic does not validate assignment: an id set afterwards may be any object. The
    append names it (was an AttributeError from ``isprintable``), and nothing is appended."""
    message = HumanMessage(content="hi", id="fine")
    message.id = bad  # type: ignore[assignment]
    session = Session()
    with pytest.raises(MessageError, match=r"message has an id that is not a string"):
        session.append_message(message)
    assert session.full_chat_history == [] and session.arrived_at == {}
