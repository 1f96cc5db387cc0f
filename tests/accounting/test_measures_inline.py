"""``Measures.add`` with the caller's role sums a text message's chars inline: always what
``message_chars`` says, for every kind of message; a custom chars measure is still called."""

from __future__ import annotations

from langchain_core.messages import AIMessage, ChatMessage, FunctionMessage, HumanMessage, SystemMessage, ToolMessage
import pytest

from session_graph.accounting.sizing import Measures, message_chars
from session_graph.accounting.tokens import TiktokenCounter, message_tokens, token_measure
from session_graph.messages import role_of

COUNTER = TiktokenCounter("o200k_base")
MESSAGES = [
    HumanMessage(content="hello there", id="h"),
    HumanMessage(content="", id="empty"),
    AIMessage(content="an answer \u00e9\u4e2d", id="a"),
    AIMessage(content="calling", tool_calls=[{"id": "c1", "name": "lookup", "args": {"topic": "x"}}], id="call"),
    AIMessage(content=[{"type": "text", "text": "blocks"}], id="blocks"),
    SystemMessage(content="be brief", id="s"),
    ToolMessage(content="result", tool_call_id="c1", name="lookup", id="t"),
    ChatMessage(content="custom role", role="critic", id="chat"),
    FunctionMessage(content="fn", name="f", id="fn"),
    HumanMessage(content="named", name="ann", id="named"),
]


@pytest.mark.parametrize("message", MESSAGES, ids=[m.id for m in MESSAGES])
def test_inline_chars_equal_message_chars(message) -> None:  # type: ignore[no-untyped-def]
    chars, tokens = Measures(token_measure(COUNTER)).add(message, role_of(message))
    assert chars == message_chars(message)
    assert tokens == message_tokens(message, COUNTER)
    assert Measures().add(message, role_of(message)) == (chars, chars)  # without a token measure: chars twice


def test_a_custom_chars_measure_is_called() -> None:
    seen = []
    measures = Measures(chars=lambda m: seen.append(m.id) or 7)
    assert measures.add(MESSAGES[0], "user") == (7, 7)
    assert seen == ["h"]
