"""``Session.append_message``'s one-call check (``storable``) and the ledger's folded id check
refuse what the two-step path refused, with the same errors naming the culprit."""

from __future__ import annotations

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
