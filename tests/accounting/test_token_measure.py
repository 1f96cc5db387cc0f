"""``token_measure`` (the ledger's per-append counter, resolved once per counter) counts as ``message_tokens``."""

from __future__ import annotations

from langchain_core.messages import AIMessage, ChatMessage, HumanMessage, SystemMessage, ToolMessage
import pytest

from session_graph import Session
from session_graph.accounting.tokens import (
    ApproxTokenCounter,
    CharCounter,
    CostRules,
    TiktokenCounter,
    message_tokens,
    token_measure,
)

MESSAGES = [
    HumanMessage("hello there, how are you?"),
    HumanMessage(""),
    HumanMessage("named", name="alice"),
    HumanMessage([{"type": "text", "text": "a part"}, "and a string"]),
    AIMessage("a plain reply"),
    AIMessage("", tool_calls=[{"id": "c1", "name": "lookup", "args": {"q": "x"}}]),
    SystemMessage("you are helpful"),
    ToolMessage("a result", tool_call_id="c1", name="lookup"),
    ToolMessage("a result without a name", tool_call_id="c2"),
    ToolMessage("", tool_call_id="c3", name="lookup"),
    ToolMessage([{"type": "text", "text": "a block result"}], tool_call_id="c4"),
    AIMessage("thinking aloud", name="planner", tool_calls=[{"id": "c5", "name": "lookup", "args": {"q": "x", "n": [1, 2]}},
                                                            {"id": None, "name": "search", "args": {"q": "会话 \"quoted\""}}]),
    AIMessage("", tool_calls=[{"id": "c6", "name": "lookup", "args": {}}], invalid_tool_calls=[]),
    ChatMessage(role="critic", content="a custom role"),
    HumanMessage("会话管理库把完整的历史记录保存下来"),
]


class PricedCounter:
    """A counter that prices whole messages (a provider's count)."""

    name = "priced"
    exact = True

    def count_text(self, text: str) -> int:
        return len(text)

    def count_message(self, message: object) -> int:
        return 7


@pytest.mark.parametrize("counter", [TiktokenCounter("o200k_base"), ApproxTokenCounter(), CharCounter(), PricedCounter()],
                         ids=["tiktoken", "approx", "chars", "priced"])
@pytest.mark.parametrize("rules", [CostRules(), CostRules(per_message=5, per_name=2)], ids=["openai", "custom"])
def test_token_measure_counts_every_kind_of_message_as_message_tokens(counter, rules):
    measure = token_measure(counter, rules)
    assert [measure(m) for m in MESSAGES] == [message_tokens(m, counter, rules) for m in MESSAGES]


def test_a_counter_set_after_the_settings_were_resolved_recounts_the_window():
    session = Session().configure(limit={"tokens": 10_000})
    session.append_message(HumanMessage("one two three four", id="a"))
    exact = session.window_totals.tokens
    session.judge_resize()  # the settings are resolved and synced once here
    session.set_token_counter(PricedCounter())
    assert session.window_totals.tokens == 7 != exact
    session.set_token_counter(None)
    assert session.window_totals.tokens == exact


def test_two_users_counters_of_one_name_count_role_names_each_their_own_way() -> None:
    """Role names are cached by counter name for this package's counters only: two lambdas are
    both ``custom:<lambda>`` and must not share counts."""
    from session_graph.accounting.counters import as_token_counter

    words, letters = as_token_counter(lambda text: len(text.split())), as_token_counter(lambda text: len(text))
    assert words.name == letters.name
    message = HumanMessage("three words here")
    assert message_tokens(message, words) == 3 + 1 + 3
    assert message_tokens(message, letters) == 3 + len("user") + len("three words here")
    assert token_measure(letters)(message) == message_tokens(message, letters)


def test_a_counter_that_fails_is_refused_when_a_message_is_counted_and_nothing_is_registered() -> None:
    from session_graph.errors import ConfigurationError

    session = Session(settings={"session.limit": {"tokens": 1000}}, token_counter=lambda text: -1)  # made without counting
    with pytest.raises(ConfigurationError, match="returned -1"):
        session.append_message({"role": "user", "content": "hi"})
    assert session.full_chat_history == []


def test_a_tool_name_is_counted_once_only_by_this_packages_counters() -> None:
    """A tool's name recurs in every result: this package's counters count it once; a user's
    counter (which need not be a function of the text alone) is asked every time."""
    from session_graph.accounting.counters import as_token_counter

    asked: list[str] = []
    user = as_token_counter(lambda text: asked.append(text) or len(text))
    results = [ToolMessage(f"result {i}", tool_call_id=f"c{i}", name="lookup") for i in range(3)]
    assert [token_measure(user)(m) for m in results] == [message_tokens(m, user) for m in results]
    assert asked.count("lookup") == 6  # three by each function
    exact = TiktokenCounter("o200k_base")
    measure = token_measure(exact)
    assert [measure(m) for m in results] == [message_tokens(m, exact) for m in results]


@pytest.mark.parametrize("calls", [
    [],
    [{"id": "c1", "name": "lookup", "args": {"q": "x"}}],
    [{"id": None, "name": 's"q', "args": {"q": '会话 "quoted"\n\t\\', "n": [1, 2.5, None, True]}}, {"name": "x", "args": {}}],
    [{"id": "é\u2028", "name": "naïve", "args": {"k": "\x00\x1f"}}],
    [{"id": 5, "name": "n", "args": {}}],  # not a str id: the whole list through the encoder
], ids=["none", "one", "escapes", "non-ascii", "int-id"])
def test_calls_text_is_the_json_of_the_calls_with_their_arguments_as_json(calls) -> None:
    import json

    from session_graph.accounting.tokens import calls_text

    expected = [{"id": c.get("id"), "name": c["name"], "arguments": json.dumps(c["args"], ensure_ascii=False)} for c in calls]
    assert calls_text(calls) == json.dumps(expected, ensure_ascii=False)
