"""model_reply: replies as real models write them, structured output through wrappers, and
fold_check: a summary fold whose reply ignores what it was fed."""

from __future__ import annotations

from typing import Any

from conftest import fake_model
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.runnables.fallbacks import RunnableWithFallbacks
from langchain_core.runnables.retry import RunnableRetry
import pytest

from session_graph import MemoUpdateError, ModelReplyError, Session
from session_graph.compression.fold_check import ignored_reason
from session_graph.compression.memo import MemoReply, ModelMemoUpdater, parse_memo_reply
from session_graph.llm.replies import cut_reason, json_object, reply_text, structured, structured_data, summary_text
from session_graph.memory.replies import Extraction, parse_decisions, parse_extraction


@pytest.mark.parametrize(
    ("reply", "memo"),
    [
        ('{"memo": {"a": 1}}', {"a": 1}),
        ('{"a": 1}', {"a": 1}),  # the bare memo: the spec's fallback to the raw dict
        ('```json\n{"memo": {"a": 1}}\n```', {"a": 1}),
        ('```JSON5\n{"a": 1}\n```', {"a": 1}),
        ('```\n{"a": 1}\n```', {"a": 1}),
        ('~~~\n{"a": 1}\n~~~', {"a": 1}),
        ('Here is the updated memo:\n{"memo": {"a": 1}}\nLet me know if you need more.', {"a": 1}),
        ('<think>the user said {"a": 0}? no</think>\n{"memo": {"a": 1}}', {"a": 1}),
        ('reasoning done</think>{"a": 1}', {"a": 1}),  # the template opened <think>
        ("{'memo': {'a': 'it is', 'b': None, 'c': True}}", {"a": "it is", "b": None, "c": True}),
        ('{"memo": {"a": [1, 2,], "b": "x",},}', {"a": [1, 2], "b": "x"}),
        ('{"memo": {"note": "a \'quoted\' word, {braces} and \\"escapes\\""}}',
         {"note": "a 'quoted' word, {braces} and \"escapes\""}),
        ('```json\n{"memo": {"a": 1}}', {"a": 1}),  # a fence never closed around a whole object
        ('{"memo": {"a": 1}}\n\nSame again: {"memo": {"a": 1}}', {"a": 1}),  # repeated, not different
    ],
)
def test_memo_replies_as_real_models_write_them(reply: str, memo: dict[str, Any]) -> None:
    assert parse_memo_reply(AIMessage(content=reply)) == memo


@pytest.mark.parametrize(
    ("reply", "reason"),
    [
        ("", "empty reply"),
        ("<think>the memo is {", "empty reply"),  # cut while thinking
        ("I updated the memo for you.", "no JSON object"),
        ('["a", "list"]', "no JSON object"),
        ('{"memo": {"a": 1, "b": "unfinished', "truncated JSON object"),
        ('```json\n{"memo": {"a": 1,\n', "truncated JSON object"),
        ('{"memo": {"a": 1}} or {"memo": {"a": 2}}', "several JSON objects"),
        ('{"memo": "a string"}', "memo is not an object"),
        ('{"memo": ["x"]}', "memo is not an object"),
        ("{'note': 'it's ambiguous'}", "no JSON object"),  # an apostrophe inside single quotes
    ],
)
def test_replies_without_one_usable_memo_are_refused_with_a_reason(reply: str, reason: str) -> None:
    with pytest.raises(MemoUpdateError) as caught:
        parse_memo_reply(AIMessage(content=reply))
    assert isinstance(caught.value.__cause__, ModelReplyError) and caught.value.__cause__.reason == reason
    assert "the memo model's reply" in str(caught.value)


def test_a_reply_the_provider_marks_as_cut_is_refused_as_cut() -> None:
    for meta in ({"finish_reason": "length"}, {"stop_reason": "max_tokens"}, {"done_reason": "length"}):
        reply = AIMessage(content='{"memo": {"a": 1, "b": ', response_metadata=meta)
        assert cut_reason(reply)
        with pytest.raises(MemoUpdateError, match="was cut: the model stopped at its output cap"):
            parse_memo_reply(reply)
    complete = AIMessage(content='{"memo": {"a": 1}} and then I', response_metadata={"finish_reason": "length"})
    assert parse_memo_reply(complete) == {"a": 1}  # a complete object before the cap is usable
    assert cut_reason(AIMessage(content="x", response_metadata={"finish_reason": "stop"})) is None


def test_reply_text_reads_content_blocks_and_drops_thinking() -> None:
    blocks = AIMessage(content=[{"type": "text", "text": "<thinking>hm</thinking>"}, {"type": "text", "text": "{}"}])
    assert reply_text(blocks) == "{}"
    assert reply_text(None) == "" and reply_text("<think>a</think> b") == "b"


def test_json_object_prefers_the_fence_and_reads_the_whole_text_otherwise() -> None:
    assert json_object('Use {x} here.\n```json\n{"a": 1}\n```') == {"a": 1}
    assert json_object('```bash\nls {dir}\n```\nThe answer: {"a": 2}') == {"a": 2}


def test_summary_text_takes_what_the_model_wrote() -> None:
    assert summary_text(AIMessage(content="```markdown\nOverview: x\n```")) == "Overview: x"
    assert summary_text(AIMessage(content='{"summary": "Overview: y"}')) == "Overview: y"
    assert summary_text(AIMessage(content="<think>plan</think>\nJust prose, no sections.")) == "Just prose, no sections."
    with pytest.raises(ModelReplyError, match="no text"):
        summary_text(AIMessage(content="<think>only thinking</think>"))


def test_commit_replies_take_a_bare_item_and_refuse_with_the_step_and_reason() -> None:
    item = '```\n{"category": "events", "abstract": "a", "content": "c"}\n```'
    assert [c.category for c in parse_extraction(AIMessage(content=item))] == ["events"]
    decision = "Sure! {'candidate': 0, 'op': 'skip', 'targets': [],}"
    assert [d.op for d in parse_decisions(AIMessage(content=decision))] == ["skip"]
    with pytest.raises(Exception, match=r"extract model's reply holds 2 different JSON objects.*several JSON objects"):
        parse_extraction(AIMessage(content='{"memories": []} {"memories": [1]}'))


class ToolCaller(BaseChatModel):
    """A model with tool calling: structured output comes back as a tool call with ``args``."""

    args: dict[str, Any] = {}  # noqa: RUF012
    name_: str = "MemoReply"

    @property
    def _llm_type(self) -> str:
        return "tool-caller-fake"

    def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
        return self

    def _generate(self, messages: list[Any], stop: Any = None, run_manager: Any = None, **kwargs: Any) -> ChatResult:
        call = {"id": "s1", "name": self.name_, "args": self.args}
        return ChatResult(generations=[ChatGeneration(message=AIMessage(content="", tool_calls=[call]))])


class Flaky(ToolCaller):
    """Fails its first ``failures`` calls, like a provider hiccup."""

    failures: int = 1
    seen: int = 0

    def _generate(self, *args: Any, **kwargs: Any) -> ChatResult:
        self.seen += 1
        if self.seen <= self.failures:
            raise ConnectionError("hiccup")
        return super()._generate(*args, **kwargs)


def test_structured_output_goes_through_with_retry() -> None:
    model = Flaky(args={"memo": {"city": "Oslo"}})
    asked = structured(model.with_retry(stop_after_attempt=3, wait_exponential_jitter=False), MemoReply)
    assert isinstance(asked, RunnableRetry)
    parsed, raw = structured_data(asked.invoke([HumanMessage(content="x")]), MemoReply)
    assert isinstance(parsed, MemoReply) and parsed.memo == {"city": "Oslo"} and raw is None and model.seen == 2


def test_structured_output_goes_through_with_fallbacks_mixed_with_text_models() -> None:
    broken = Flaky(failures=10**6)
    text_only = fake_model('```json\n{"memo": {"city": "Bergen"}}\n```')
    asked = structured(broken.with_fallbacks([text_only]), MemoReply)
    assert isinstance(asked, RunnableWithFallbacks)
    updater = ModelMemoUpdater(broken.with_fallbacks([text_only]))
    session = Session(memo_update_handler=updater).use_memo(messages=2)
    session.append_message({"role": "user", "content": "I moved to Bergen"})
    session.append_message({"role": "assistant", "content": "Noted"})
    session.resize("lite")
    assert session.memo_for_model == {"city": "Bergen"} and broken.seen == 1
    assert structured(fake_model("x").with_fallbacks([fake_model("y")]), MemoReply) is None  # no structured output anywhere
    assert structured(fake_model("x").bind(stop=["\n"]), MemoReply) is None  # bound arguments: asked as text
    configured = structured(ToolCaller(args={"memo": {"a": 1}}).with_config(tags=["t"]), MemoReply)
    assert configured is not None and configured.config["tags"] == ["t"]  # type: ignore[attr-defined]
    assert structured_data(configured.invoke("x"), MemoReply)[0] == MemoReply(memo={"a": 1})


def test_structured_tool_args_of_the_other_shapes_are_read_leniently() -> None:
    model = ToolCaller(args={"memories": [{"category": "events", "abstract": "a", "content": "c", "junk": 1}]}, name_="Extraction")
    result = structured(model, Extraction).invoke([HumanMessage(content="x")])  # type: ignore[union-attr]
    assert [c.content for c in parse_extraction(result)] == ["c"]
    bad = structured(ToolCaller(args={"memories": "nope"}, name_="Extraction"), Extraction).invoke("x")  # type: ignore[union-attr]
    with pytest.raises(Exception, match="extract model's reply must be"):
        parse_extraction(bad)


FED = [HumanMessage(content="We move the cache to Redis on Thursday, budget $48,500, deadline March 14 in Frankfurt.")]


def test_ignored_reason_names_both_kinds_and_spares_fair_replies() -> None:
    previous = "Overview: planning a migration."
    more = [*FED, HumanMessage(content="Tomasz measured the initial copy: nine hours. Peak traffic is Monday mornings.")]
    assert "unchanged" in (ignored_reason(previous, more, previous + "\n") or "")
    one_line = [HumanMessage(content="The rollback fixed the drift.")]  # too little that is new to judge
    assert ignored_reason(previous, one_line, previous) is None
    unrelated = "Overview: the user likes tea and poetry about oceans and mountains."
    assert "shares none of the" in (ignored_reason(previous, FED * 2, unrelated) or "")
    reworded = "Overview: the cache and the deadline are as they were."  # known facts, in the fed words
    assert ignored_reason(previous, FED, reworded) is None
    assert ignored_reason(previous, FED, previous + " Cache moves to Redis.") is None
    assert ignored_reason(previous, [HumanMessage(content="ok, thanks!")], previous) is None
    assert ignored_reason("", [], "anything") is None


def test_a_memo_reply_that_would_wipe_or_wrap_the_memo_is_read_right() -> None:
    """An empty bare object is refused (only ``{"memo": {}}`` empties a memo); a tool-call shape
    is unwrapped, never stored as the memo."""
    from session_graph.errors import ModelReplyError
    from session_graph.llm.replies import memo_of

    with pytest.raises(ModelReplyError, match="empty object"):
        memo_of({})
    assert memo_of({"memo": {}}) == {}
    assert memo_of({"name": "update_memo", "arguments": {"memo": {"city": "Berlin"}}}) == {"city": "Berlin"}
    assert memo_of({"name": "update_memo", "parameters": {"city": "Berlin"}}) == {"city": "Berlin"}
    assert memo_of({"name": "Ada", "city": "Berlin"}) == {"name": "Ada", "city": "Berlin"}  # a memo with a name is a memo


def test_a_model_whose_structured_output_is_refused_is_asked_as_text() -> None:
    """A provider that rejects the memo schema (OpenAI's strict mode and a free-form dict) does
    not fail every fold: the fold asks as text and keeps to text."""
    from langchain_core.language_models.fake_chat_models import FakeListChatModel

    from session_graph.compression.memo import ModelMemoUpdater

    class Refusing(FakeListChatModel):
        def with_structured_output(self, schema: Any, **kwargs: Any) -> Any:  # type: ignore[override]
            def refuse(_: Any) -> Any:
                raise ValueError("Invalid schema for response_format 'MemoReply': additionalProperties must be false")

            from langchain_core.runnables import RunnableLambda

            return RunnableLambda(refuse)

    model = Refusing(responses=['{"memo": {"city": "Berlin"}}', '{"memo": {"city": "Paris"}}'])
    session = Session(model=model).configure(mode="memo", limit={"messages": 4})
    updater = session.handlers.model_updater
    assert isinstance(updater, ModelMemoUpdater) and updater.structured is not None
    for i in range(3):
        session.append_message({"role": "user", "content": f"I moved, message {i}"})
        session.append_message({"role": "assistant", "content": "Noted."})
    session.resize(force="deep")
    assert session.memo_for_model == {"city": "Berlin"} and updater.structured is None


@pytest.mark.parametrize("reply", ["{'}': {'': None}, ''", "{'}': {'': null}, ''", "Updated memo: {'a}': {'b': 1}, 'c"])
def test_a_single_quoted_reply_cut_after_a_brace_in_a_key_is_refused_not_read_from_its_inner_object(reply: str) -> None:
    """A cut reply whose only balanced part is an inner object (the scan that ignores single
    quotes closes the outer one at a ``}`` inside a key) is refused, never taken as the memo
    (found by the reply corpus)."""
    with pytest.raises(MemoUpdateError) as caught:
        parse_memo_reply(AIMessage(content=reply))
    assert isinstance(caught.value.__cause__, ModelReplyError)
