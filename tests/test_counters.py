"""Your own token counter, and session.counter as trim_messages' token_counter."""

from __future__ import annotations

from typing import Any

from conftest import chat
from langchain_core.language_models.fake_chat_models import FakeListChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, trim_messages
import pytest

from session_graph import ConfigurationError, Session
from session_graph.accounting.counters import MessagesCounter, TextCounter, as_token_counter
from session_graph.accounting.tokens import TiktokenCounter, message_tokens

BUDGET = {"session.limit": {"tokens": 400}}


def words(text: str) -> int:
    return len(text.split())


class HFTokenizer:
    """Shaped like a Hugging Face tokenizer: encode adds BOS/EOS unless told not to."""

    name_or_path = "fake/bpe"

    def __init__(self) -> None:
        self.flags: list[bool] = []

    def encode(self, text: str, add_special_tokens: bool = True) -> list[int]:
        self.flags.append(add_special_tokens)
        ids = [ord(c) for c in text.replace(" ", "")]
        return [1, *ids, 2] if add_special_tokens else ids


class RustTokenizer:
    """Shaped like tokenizers.Tokenizer: encode gives an Encoding with .ids."""

    class Encoding:
        def __init__(self, ids: list[int]) -> None:
            self.ids = ids

    def encode(self, text: str) -> Encoding:
        return self.Encoding(list(range(len(text) // 2)))


class ProviderModel(FakeListChatModel):
    """A chat model with the provider's own count: 10 per message plus one per character."""

    def get_num_tokens_from_messages(self, messages: list[BaseMessage], tools: Any = None) -> int:
        return sum(10 + len(m.text) for m in messages)


class Client:
    """An object with count_tokens taking messages (like a provider SDK's)."""

    def count_tokens(self, messages: list[BaseMessage]) -> int:
        return sum(7 + len(m.text.split()) for m in messages)


def test_a_text_function_counts_the_window_and_the_budget_holds() -> None:
    session = chat(Session(settings=BUDGET, token_counter=words), 30, size=40)
    assert session.counter.name == "custom:words" and session.counter.exact
    one = HumanMessage(content="three little words")
    assert session.tokens_of(one) == 3 + session.counter.count_text("human") + 3  # overhead + role + text
    expected = sum(message_tokens(m, session.counter) for m in session.current_chat_history)
    assert session.window_totals.tokens == expected
    session.resize()
    assert session.view().tokens <= 400


@pytest.mark.parametrize(
    ("value", "kind", "name"),
    [
        (words, TextCounter, "custom:words"),
        (lambda text: len(text), TextCounter, "custom:<lambda>"),  # unannotated: it accepts a string
        (lambda messages: sum(len(m.text) for m in messages), MessagesCounter, "custom:<lambda>"),
        (HFTokenizer(), TextCounter, "tokenizer:fake/bpe"),
        (RustTokenizer(), TextCounter, "tokenizer:RustTokenizer"),
        (ProviderModel(responses=["x"]), MessagesCounter, "model:ProviderModel"),
        (Client(), MessagesCounter, "custom:count_tokens"),
        (TiktokenCounter(), TiktokenCounter, "tiktoken:o200k_base"),
    ],
)
def test_every_kind_of_counter_is_recognised(value: Any, kind: type, name: str) -> None:
    counter = as_token_counter(value)
    assert isinstance(counter, kind) and counter.name == name
    assert counter.count_text("hello world " * 20) > counter.count_text("hello") > 0


def test_tokenizers_count_without_special_tokens_and_providers_price_whole_messages() -> None:
    tokenizer = HFTokenizer()
    assert as_token_counter(tokenizer).count_text("ab cd") == 4 and tokenizer.flags == [False]
    session = Session(token_counter=ProviderModel(responses=["x"]))
    message = AIMessage(content="12345")
    assert session.tokens_of(message) == 15  # the provider's own price, not our overhead rules on top
    assert session.counter.count_text("12345") == 5  # a message of it less an empty message


def test_trim_messages_takes_session_counter() -> None:
    session = chat(Session(settings=BUDGET), 20, size=60)
    messages = session.current_chat_history
    kept = trim_messages(messages, max_tokens=120, token_counter=session.counter, strategy="last")
    assert kept and kept == messages[-len(kept):]
    assert session.counter(kept) <= 120 < session.counter(messages[-len(kept) - 1:])
    assert session.counter(kept) == sum(message_tokens(m, session.counter) for m in kept) + 3  # as the view counts
    custom = Session(settings=BUDGET, token_counter=words)
    kept = trim_messages(messages, max_tokens=40, token_counter=custom.counter, strategy="last")
    assert custom.counter(kept) <= 40 and len(kept) < len(messages)


def test_switching_back_and_bad_counters() -> None:
    session = chat(Session(settings=BUDGET), 3)
    before = session.window_totals.tokens
    session.set_token_counter(Client())
    assert session.window_totals.tokens == 8 * 6 and session.counter.name == "custom:count_tokens"
    session.load_json(session.to_json())  # a reload of the state keeps the counter in use
    assert session.counter.name == "custom:count_tokens" and session.window_totals.tokens == 8 * 6
    session.set_token_counter(None)
    assert session.window_totals.tokens == before and session.counter.name == "tiktoken:o200k_base"
    with pytest.raises(ConfigurationError, match=r"a token counter must be a function.*got int"):
        Session(token_counter=42)
    broken = Session(settings=BUDGET, token_counter=lambda text: -1)
    with pytest.raises(ConfigurationError, match="returned -1; a counter must return a whole number"):
        broken.append_message({"role": "user", "content": "hi"})
    assert broken.full_chat_history == []  # nothing registered for a message that could not be counted


def test_an_unannotated_counter_is_read_by_its_parameter_name_or_refused_when_ambiguous() -> None:
    """A messages counter named ``messages`` is never taken for a text counter (it would count
    characters); a function that takes text and messages alike must say which it counts."""
    from langchain_core.messages import HumanMessage

    from session_graph.accounting.counters import MessagesCounter, as_token_counter
    from session_graph.errors import ConfigurationError

    per_message = as_token_counter(lambda messages: 4 * len(messages) + sum(len(m.content.split()) for m in messages))
    assert isinstance(per_message, MessagesCounter)
    assert per_message.count_message(HumanMessage(content="six words in this short message")) == 4 + 6
    words = as_token_counter(lambda text: len(text.split()))
    assert words.count_text("three little words") == 3
    with pytest.raises(ConfigurationError, match="annotate its first parameter"):
        as_token_counter(lambda x: len(x))
