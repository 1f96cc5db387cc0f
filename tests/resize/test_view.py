"""view() under a token budget: composition, reverse fill, truncation, summary mode."""

from __future__ import annotations

import json
from typing import Any

from conftest import Api, chat, fake_model
from langchain_core.messages import AIMessage, SystemMessage, ToolMessage
import pytest

from session_graph import MemoUpdateError, Session
from session_graph.accounting.tokens import message_tokens
from session_graph.compression.context import summary_body
from session_graph.compression.summary import DEFAULT_SUMMARY_PROMPT, SUMMARY_HEADER
from session_graph.llm.quote import quote


def budget_session(tokens: int, **settings: Any) -> Session:
    session = Session().configure(limit={"tokens": tokens})
    for key, value in settings.items():
        session.set_settings(key, value)
    return session


def view_tokens(session: Session) -> int:
    view = session.view()
    recount = sum(message_tokens(m, session.counter) for m in view.messages) + 3
    assert view.tokens == recount
    return view.tokens


def test_the_view_is_system_prompt_then_window_within_budget(api: Api) -> None:
    session = budget_session(120)
    session.append_message(SystemMessage(content="You are a terse assistant."))
    chat(session, 20, size=30)
    view = session.view()
    assert view.counter == "tiktoken:o200k_base" and view.exact and view.budget == 120
    assert view.messages[0].content == "You are a terse assistant."
    assert view.tokens <= 120 and view.tokens == view_tokens(session)
    assert view.messages[1].type == "human"  # the window opens on a user turn
    assert view.messages[-1] is session.full_chat_history[-1]
    api.resize(session)  # a resize prunes the stored window to the budget too
    assert session.judge_resize() is None
    assert session.view().messages[0].content == "You are a terse assistant."
    assert len(session.full_chat_history) == 41


def test_reverse_fill_keeps_whole_tool_units(api: Api) -> None:
    session = budget_session(90)
    session.append_message({"role": "user", "content": "compare the weather"})
    session.append_message(AIMessage(content="", tool_calls=[
        {"id": "a", "name": "weather", "args": {"city": "Oslo"}},
        {"id": "b", "name": "weather", "args": {"city": "Rome"}},
    ]))
    session.append_message(ToolMessage(content="cold " * 5, tool_call_id="a"))
    session.append_message(ToolMessage(content="warm " * 5, tool_call_id="b"))
    session.append_message({"role": "assistant", "content": "Oslo is colder."})
    session.append_message({"role": "user", "content": "and tomorrow?"})
    view = session.view()
    types = [m.type for m in view.messages]
    assert view.tokens <= 90 and types[0] == "human"
    if "tool" in types:  # never a result without its call, never a call without all results
        assert types.count("tool") == 2 and "ai" in types


def test_a_newest_message_bigger_than_the_budget_is_truncated_in_the_view_only() -> None:
    session = budget_session(60)
    session.append_message(SystemMessage(content="Be brief."))
    chat(session, 2)
    huge = "word " * 500
    session.append_message({"role": "user", "content": huge})
    view = session.view()
    assert view.tokens <= 60
    last = view.messages[-1]
    assert last.response_metadata["session_graph"]["truncated"] is True
    assert huge.startswith(last.content) and len(last.content) < len(huge)
    assert view.truncated == (last.id,)
    assert session.full_chat_history[-1].content == huge  # the history keeps it whole
    assert view_tokens(session) == view.tokens
    # exact fit: one more character would not fit
    longer = last.model_copy(update={"content": huge[: len(last.content) + 5]})
    assert sum(message_tokens(m, session.counter) for m in [*view.messages[:-1], longer]) + 3 > 60


def test_a_system_prompt_bigger_than_the_budget_is_truncated_and_the_user_still_fits() -> None:
    session = budget_session(100)
    session.append_message(SystemMessage(content="Rule. " * 300))
    session.append_message({"role": "user", "content": "What is 2 + 2?"})
    view = session.view()
    assert view.tokens <= 100
    assert view.messages[0].type == "system" and view.messages[0].response_metadata["session_graph"]["truncated"]
    assert view.messages[-1].content == "What is 2 + 2?"


def test_the_newest_user_message_stays_when_its_turn_is_over_budget() -> None:
    session = budget_session(120)
    chat(session, 3)
    session.append_message({"role": "user", "content": "research this"})
    for i in range(6):
        session.append_message(AIMessage(content="", tool_calls=[{"id": f"c{i}", "name": "search", "args": {"q": i}}]))
        session.append_message(ToolMessage(content=f"result {i} " * 8, tool_call_id=f"c{i}"))
    view = session.view()
    assert view.tokens <= 120
    window = view.messages
    assert window[0].content == "research this" and view.elided > 0
    assert window[-1].type == "tool" and window[-2].type == "ai"  # the newest step, whole


def test_memo_mode_puts_the_memo_in_the_view(api: Api) -> None:
    model = fake_model(json.dumps({"memo": {"user": "likes tea"}}))
    session = Session(model=model).use_memo(messages=2)
    session.set_settings("session.limit.tokens", 400)
    session.append_message(SystemMessage(content="sys"))
    chat(session, 3)
    api.resize(session, "lite")
    view = session.view()
    assert [m.type for m in view.messages[:2]] == ["system", "system"]
    assert json.loads(view.messages[1].content.split("\n", 1)[1]) == {"user": "likes tea"}
    assert "last_resize" not in view.messages[1].content


def summary_session(budget: int, reserve: int, handler: Any = None, model: Any = None) -> Session:
    session = Session(model=model, summary_handler=handler).configure(mode="summary", limit={"tokens": budget})
    session.set_settings("session.summary.reserve_tokens", reserve)
    session.set_settings("session.resize.every_n_turns", 0)
    return session


def test_summary_mode_folds_only_what_leaves_and_only_once(api: Api) -> None:
    calls: list[tuple[str, list[str]]] = []
    returned: list[str] = []

    def summarize(summary, messages, settings):  # type: ignore[no-untyped-def]
        calls.append((summary, [m.content for m in messages]))
        returned.append(f"fold {len(returned)}: " + ",".join(m.content[:3] for m in messages))
        return returned[-1]

    session = summary_session(150, 60, handler=summarize)
    session.append_message(SystemMessage(content="sys"))
    for i in range(24):
        chat(session, 1, size=20, start=i)
        if session.judge_resize():
            api.resize(session)
            assert session.judge_resize() is None
        assert session.view().tokens <= 150
    assert len(calls) >= 2
    assert [summary for summary, _ in calls] == ["", *returned[:-1]]  # each fold starts from the last one
    folded = [content for _, messages in calls for content in messages]
    history = session.full_chat_history
    assert folded == [m.content for m in history[1 : session.memo_cursor]]  # each once, in order, never "sys"
    window_start = history.index(session.current_chat_history[0])
    # nothing left the window unfolded; the fold may run ahead to the headroom cut while the
    # window keeps what fits the whole budget (those messages are then pruned without a call)
    assert 1 <= window_start <= session.memo_cursor
    view = session.view()
    assert view.messages[0].content == "sys" and view.messages[1].content == SUMMARY_HEADER + quote(returned[-1])  # the summary is data


def test_the_default_summary_prompt_is_structured_and_replaceable(api: Api) -> None:
    model = fake_model("Overview: tea talk\nKey facts and decisions:\n- likes tea\nUser intent: chat\nOpen tasks:\n- none")
    session = summary_session(80, 40, model=model)
    chat(session, 6, size=20)
    api.resize(session, "lite")
    prompt = model.prompts[0]
    for section in ("Overview:", "Key facts and decisions:", "User intent:", "Open tasks:"):
        assert section in prompt[0].content
    assert prompt[0].content.startswith(DEFAULT_SUMMARY_PROMPT)
    assert "must fit in 24 tokens" in prompt[0].content  # the reserve (40) less the message header
    assert prompt[1].content.startswith('Current summary:\n(none yet)\n\nNew messages:\nU: "u0')  # lean roles, quoted texts
    assert session.memo["summary"].startswith("Overview: tea talk")
    session.set_settings("session.summary.prompt", "Summarize in one sentence.")
    chat(session, 4, size=20, start=6)
    model.responses = ["One sentence."]
    model.i = 0
    api.resize(session, "lite")
    assert model.prompts[-1][0].content.startswith("Summarize in one sentence.\nThe whole summary must fit in 24 tokens: drop old details")
    assert model.prompts[-1][1].content.startswith("Current summary:\nOverview: tea talk")  # fed whole


def test_a_summary_over_its_reserve_is_kept_whole_and_shown_shortened_by_structure(api: Api) -> None:
    facts = [f"- fact {i} about the billing export" for i in range(120)]
    reply = "Overview: billing work\nKey facts and decisions:\n" + "\n".join(facts) + "\nOpen tasks:\n- ship the fix"
    session = summary_session(300, 60, handler=lambda summary, messages, settings: reply)
    chat(session, 30, size=40)
    api.resize(session, "lite")
    assert session.memo["summary"] == reply  # stored whole: the next fold is fed all of it
    view = session.view()
    shown = next(m for m in view.messages if (m.id or "").endswith(":summary"))
    assert message_tokens(shown, session.counter) <= 60 and view.tokens <= 300
    text = summary_body(shown.text)  # shown as one JSON string after the header
    assert shown.text.count("\n") == 1 and shown.text.startswith(SUMMARY_HEADER + '"')
    assert shown.response_metadata["session_graph"]["shortened"] is True
    assert "- fact 119 about" in text and "- fact 0 about" not in text  # the oldest items go first
    assert "Open tasks:\n- ship the fix" in text  # the newest section is never dropped


@pytest.mark.parametrize("failure", ["raise", "empty"])
def test_a_failing_summary_keeps_everything_it_does_not_cover(api: Api, failure: str) -> None:
    def broken(summary, messages, settings):  # type: ignore[no-untyped-def]
        if failure == "raise":
            raise TimeoutError("summary model timed out")
        return "   "

    session = summary_session(100, 30, handler=broken)
    chat(session, 10, size=20)
    before = list(session.current_chat_history)
    with pytest.raises(MemoUpdateError, match="summary") as caught:
        api.resize(session, "lite")
    assert caught.value.memo_cursor == 0
    assert session.current_chat_history == before and session.memo_cursor == 0 and "summary" not in session.memo
    session.set_summary_handler(lambda summary, messages, settings: "recovered")
    api.resize(session, "lite")
    assert session.memo["summary"] == "recovered" and session.memo_cursor > 0
    assert len(session.current_chat_history) < len(before)


def test_summary_mode_without_a_model_says_how_to_fix_it(api: Api) -> None:
    session = summary_session(60, 20)
    chat(session, 10, size=20)
    with pytest.raises(MemoUpdateError, match="summary mode needs a chat model"):
        api.resize(session, "lite")


def test_outside_tokens_come_off_the_budget() -> None:
    from session_graph import ConfigurationError

    session = budget_session(200)
    chat(session, 20, size=30)
    alone, shared = session.view(), session.view(outside_tokens=80)
    assert alone.tokens <= 200 and shared.tokens <= 200
    assert len(shared.messages) < len(alone.messages)
    assert shared.tokens - 80 == sum(message_tokens(m, session.counter) for m in shared.messages) + 3
    with pytest.raises(ConfigurationError, match="outside_tokens"):
        session.view(outside_tokens=-1)


def test_an_agents_system_prompt_is_counted_once_per_text_and_counter(monkeypatch: pytest.MonkeyPatch) -> None:
    from session_graph.accounting.tokens import load_encoding

    counted: list[int] = []
    encoding = load_encoding("o200k_base")

    class Spy:  # tiktoken's core, which every count reaches
        def __init__(self, core: object) -> None:
            self.core = core

        def encode_ordinary(self, text: str) -> list[int]:
            counted.append(len(text))
            return self.core.encode_ordinary(text)  # type: ignore[attr-defined, no-any-return]

        def __getattr__(self, name: str) -> object:
            return getattr(self.core, name)

    monkeypatch.setattr(encoding, "_core_bpe", Spy(encoding._core_bpe))
    session = Session().configure(limit={"tokens": 4000})
    prompt = "You are a careful assistant. " * 300
    first = session.tokens_of(SystemMessage(content=prompt))
    assert [session.tokens_of(SystemMessage(content=prompt)) for _ in range(3)] == [first] * 3  # new objects, same text
    assert sum(1 for n in counted if n == len(prompt)) == 1
    assert session.tokens_of(SystemMessage(content=prompt, name="boss")) > first  # a name costs: not the cached count
    session.set_token_counter(lambda text: 1)  # another counter: counted again, with it
    assert session.tokens_of(SystemMessage(content=prompt)) != first
