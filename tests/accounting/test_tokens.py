"""Token counters: exact offline tiktoken, the estimate, message cost rules, caching."""

from __future__ import annotations

import socket
import warnings

from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage
import pytest

from session_graph import Session
from session_graph.accounting import tokens as tokens_module
from session_graph.accounting.tokens import (
    ApproxTokenCounter,
    CharCounter,
    CostRules,
    TiktokenCounter,
    counter_for,
    image_tokens,
    load_encoding,
    message_tokens,
    truncate_to_tokens,
)


@pytest.fixture
def no_network(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("tried to reach the network")

    monkeypatch.setattr(socket, "create_connection", refuse)
    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "getaddrinfo", refuse)


@pytest.mark.parametrize(("name", "ids"), [("cl100k_base", [15339, 1917]), ("o200k_base", [24912, 2375])])
def test_bundled_encodings_are_exact_and_offline(no_network: None, name: str, ids: list[int]) -> None:
    load_encoding.cache_clear()
    encoding = load_encoding(name)
    assert encoding.name == name
    assert encoding.encode_ordinary("hello world") == ids
    assert encoding.decode(encoding.encode_ordinary("héllo 世界 <|endoftext|>")) == "héllo 世界 <|endoftext|>"
    assert encoding.n_vocab == {"cl100k_base": 100277, "o200k_base": 200019}[name]


def test_special_token_text_is_counted_not_refused() -> None:
    counter = TiktokenCounter("o200k_base")
    assert counter.count_text("<|endoftext|>") > 1  # ordinary text, not the special token
    assert counter.name == "tiktoken:o200k_base" and counter.exact


def test_damaged_data_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    import hashlib

    load_encoding.cache_clear()
    real = hashlib.sha256
    monkeypatch.setattr(tokens_module.hashlib, "sha256", lambda data: real(b"tampered"))
    with pytest.raises(LookupError, match="does not match tiktoken's expected hash"):
        load_encoding("cl100k_base")
    load_encoding.cache_clear()


def test_unavailable_encodings_fall_back_out_loud(no_network: None) -> None:
    with pytest.warns(RuntimeWarning, match="not bundled.*approx:script-aware"):
        counter = counter_for(encoding="p50k_base")
    assert counter.name == "approx:script-aware" and not counter.exact
    with pytest.warns(RuntimeWarning, match="no tiktoken encoding is known for model 'my-llm'"):
        assert counter_for(model="my-llm").name == "approx:script-aware"
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert counter_for(model="gpt-4o").name == "tiktoken:o200k_base"
        assert counter_for(model="gpt-4").name == "tiktoken:cl100k_base"
        assert counter_for().name == "tiktoken:o200k_base"


def test_the_estimate_is_script_aware() -> None:
    exact, approx = TiktokenCounter("cl100k_base"), ApproxTokenCounter()
    chinese = "会话管理库把完整的历史记录保存下来，同时只把当前窗口发送给模型。" * 4
    assert approx.count_text(chinese) == pytest.approx(len(chinese), rel=0.1)  # ~1 token per character
    assert len(chinese) / 4 < exact.count_text(chinese) / 3  # chars/4 is far too low on Chinese
    english = "The session keeps the full history and sends only the window to the model. " * 10
    assert approx.count_text(english) == pytest.approx(exact.count_text(english), rel=0.2)
    assert approx.count_text("") == 0


def test_message_cost_rules() -> None:
    counter = TiktokenCounter("o200k_base")
    text = counter.count_text
    rules = CostRules()
    assert message_tokens(HumanMessage(content="hello world"), counter) == 3 + text("user") + 2
    named = HumanMessage(content="hi", name="ann")
    assert message_tokens(named, counter) == 3 + text("user") + text("hi") + 1 + text("ann")
    call = AIMessage(content="", tool_calls=[{"id": "c1", "name": "search", "args": {"q": "x" * 50}}])
    assert message_tokens(call, counter) > 3 + text("assistant") + 10
    result = ToolMessage(content="ok", tool_call_id="call_abc")
    assert message_tokens(result, counter) == 3 + text("tool") + text("ok") + text("call_abc")
    custom = CostRules(per_message=4, per_name=0)
    assert message_tokens(named, counter, custom) == 4 + text("user") + text("hi") + text("ann")
    assert rules.reply_priming == 3


@pytest.mark.parametrize(
    ("part", "expected"),
    [
        ({"type": "image_url", "image_url": {"url": "https://x/a.png", "detail": "low"}}, 85),
        ({"type": "image_url", "image_url": {"url": "https://x/a.png"}}, 1000),
        ({"type": "image_url", "image_url": {"url": "https://x/a.png"}, "width": 512, "height": 512}, 85 + 170),
        ({"type": "image_url", "image_url": {"url": "https://x/a.png"}, "width": 1024, "height": 1024}, 85 + 170 * 4),
        # 4096 x 2048 -> fit 2048 x 1024 -> short side 768: 1536 x 768 -> 3 x 2 tiles
        ({"type": "image", "url": "https://x/a.png", "width": 4096, "height": 2048}, 85 + 170 * 6),
    ],
)
def test_image_tokens(part: dict, expected: int) -> None:
    assert image_tokens(part) == expected
    message = HumanMessage(content=[part])
    counter = TiktokenCounter("o200k_base")
    assert message_tokens(message, counter) == 3 + counter.count_text("user") + expected


def test_char_counter_is_the_spec_approximation() -> None:
    assert message_tokens(HumanMessage(content="hello"), CharCounter()) == len("user") + 1 + 5


def test_truncate_to_tokens_is_a_binary_search_to_the_exact_fit() -> None:
    counter = TiktokenCounter("cl100k_base")
    text = "one two three four five six seven eight nine ten " * 20
    for limit in (0, 1, 7, 50, 10_000):
        cut = truncate_to_tokens(text, limit, counter.count_text)
        assert counter.count_text(cut) <= limit
        assert text.startswith(cut)
        if cut != text:
            assert counter.count_text(text[: len(cut) + 1]) > limit or counter.count_text(text[: len(cut) + 2]) > limit


def test_the_session_chooses_and_reports_its_counter() -> None:
    session = Session()
    assert session.counter.name == "chars"
    session.set_settings("session.limit.tokens", 1000)
    assert session.counter.name == "tiktoken:o200k_base"
    session.set_settings("session.tokens.encoding", "cl100k_base")
    assert session.counter.name == "tiktoken:cl100k_base"
    session.set_settings("session.tokens.approximate", True)
    assert session.counter.name == "approx:script-aware"


def test_each_message_is_tokenized_once(monkeypatch: pytest.MonkeyPatch) -> None:
    encoded: list[str] = []
    encoding = load_encoding("o200k_base")

    class Spy:  # tiktoken's core, seen by every path to it (the counter calls it directly for ASCII text)
        def __init__(self, core: object) -> None:
            self.core = core

        def encode_ordinary(self, text: str) -> list[int]:
            encoded.append(text)
            return self.core.encode_ordinary(text)  # type: ignore[attr-defined, no-any-return]

        def __getattr__(self, name: str) -> object:
            return getattr(self.core, name)

    monkeypatch.setattr(encoding, "_core_bpe", Spy(encoding._core_bpe))
    session = Session().configure(limit={"tokens": 200})
    session.append_message(SystemMessage(content="You are terse."))
    for i in range(30):
        encoded.clear()
        session.append_message({"role": "user", "content": f"question number {i}"})
        session.append_message({"role": "assistant", "content": f"answer number {i}"})
        session.judge_resize()
        session.resize()
        session.view()
        # the only tokenizer work of a turn: the new messages (and their role names)
        assert sorted(encoded) == sorted([f"question number {i}", f"answer number {i}"])
    assert session.window_totals.tokens == sum(message_tokens(m, session.counter) for m in session.current_chat_history)
