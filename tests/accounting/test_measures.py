"""``Measures`` (each message's chars and tokens in one cache entry) and ``RunningTotals`` (the
window's totals updated in place): the same numbers as measuring afresh and as ``WindowTotals``."""

from __future__ import annotations

import random

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage

from session_graph.accounting.sizing import Measures, message_chars
from session_graph.accounting.tokens import TiktokenCounter, message_tokens, token_measure
from session_graph.accounting.window import RunningTotals, WindowTotals

COUNTER = TiktokenCounter("o200k_base")
PIXELS = "iVBORw0KGgo" * 300


def _messages() -> list[BaseMessage]:
    return [
        SystemMessage("be brief", id="s"),
        HumanMessage("what is the weather in Paris?", id="u1"),
        AIMessage("", tool_calls=[{"id": "c1", "name": "weather", "args": {"city": "Paris"}}], id="a1"),
        ToolMessage("sunny, 21 C", tool_call_id="c1", name="weather", id="t1"),
        HumanMessage([{"type": "text", "text": "and this?"}, {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{PIXELS}"}}],
                     id="u2"),
        AIMessage("a cat", name="bot", id="a2"),
    ]


class _Counted:
    """A measure that records which messages it measured."""

    def __init__(self, measure):  # type: ignore[no-untyped-def]
        self.measure, self.seen = measure, []

    def __call__(self, message: BaseMessage) -> int:
        self.seen.append(message.id)
        return self.measure(message)


def test_added_messages_are_measured_once_and_give_what_measuring_afresh_gives() -> None:
    chars, tokens = _Counted(message_chars), _Counted(token_measure(COUNTER))
    measures = Measures(tokens, chars)
    messages = _messages()
    for message in messages:
        assert measures.add(message) == (message_chars(message), message_tokens(message, COUNTER))
    for message in messages * 3:  # read again and again: from the entry
        assert measures.chars(message) == message_chars(message)
        assert measures.tokens(message) == message_tokens(message, COUNTER)
    assert chars.seen == tokens.seen == [m.id for m in messages]
    assert len(measures) == len(messages)  # one entry per message holds both


def test_an_edited_copy_under_the_same_id_is_measured_afresh() -> None:
    measures = Measures(token_measure(COUNTER))
    message = HumanMessage("short", id="m")
    measures.add(message)
    edited = message.model_copy(update={"content": "a much longer text than before, with more words in it"})
    assert measures.tokens(edited) == message_tokens(edited, COUNTER)
    assert measures.chars(edited) == message_chars(edited)
    assert measures.tokens(message) == message_tokens(message, COUNTER)  # the original again: measured again, right


def test_a_message_read_for_its_chars_only_is_not_encoded() -> None:
    tokens = _Counted(token_measure(COUNTER))
    measures = Measures(tokens)
    message = HumanMessage("never counted", id="m")
    assert measures.chars(message) == message_chars(message)
    assert tokens.seen == []
    assert measures.tokens(message) == message_tokens(message, COUNTER)
    assert measures.tokens(message) == message_tokens(message, COUNTER)
    assert measures.chars(message) == message_chars(message)
    assert tokens.seen == ["m"]


def test_without_a_token_measure_tokens_are_chars_and_uncached_reads_store_nothing() -> None:
    measures = Measures()
    for message in _messages():
        assert measures.add(message) == (message_chars(message), message_chars(message))
        assert measures.tokens(message) == measures.chars(message) == message_chars(message)
    merged = SystemMessage("a merged system message", id="s")  # shares an id with one in the cache
    assert measures.uncached_tokens(merged) == measures.uncached_chars(merged) == message_chars(merged)
    assert measures.chars(_messages()[0]) == message_chars(_messages()[0])
    counted = Measures(token_measure(COUNTER))
    counted.add(_messages()[0])
    assert counted.uncached_tokens(merged) == message_tokens(merged, COUNTER)
    assert len(counted) == 1


def test_running_totals_are_window_totals_updated_in_place() -> None:
    rng = random.Random(7)
    for _ in range(200):
        frozen, running = WindowTotals(), RunningTotals()
        for _ in range(rng.randint(0, 30)):
            role, size, tokens = rng.choice(["user", "assistant", "tool", "system"]), rng.randint(0, 50), rng.randint(0, 20)
            frozen, before = frozen.add(role, size, tokens), running.snapshot()
            running.add(role, size, tokens)
            assert running.snapshot() == frozen
            assert before != frozen  # a snapshot taken earlier does not move with the running totals
            limits = rng.randint(0, 400), rng.randint(0, 20), rng.randint(0, 300)
            assert running.prunable(*limits) == frozen.prunable(*limits)
        assert RunningTotals(frozen).snapshot() == frozen
