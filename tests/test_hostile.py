"""Hostile inputs and models (issue 24): oversize messages, failing models, memos the view
cannot shorten by lists, models that will not compress, mid-conversation system messages."""

from __future__ import annotations

import contextlib
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage

from session_graph import MemoUpdateError, Session


def turn(session: Session, i: int, size: int = 60) -> None:
    """One user/assistant exchange, then a resize when the policy asks (failures are reported, not raised)."""
    session.append_message(HumanMessage(content=f"q{i} ".ljust(size, "."), id=f"u{i}"))
    session.append_message(AIMessage(content=f"a{i} ".ljust(size, "."), id=f"a{i}"))
    resize(session)


def resize(session: Session) -> None:
    if session.judge_resize():
        with contextlib.suppress(MemoUpdateError):
            session.resize()


def oversize_tool_turn(session: Session, chars: int = 120_000) -> None:
    session.append_message(HumanMessage(content="read the log", id="big-q"))
    session.append_message(AIMessage(content="", tool_calls=[{"id": "c1", "name": "read", "args": {"f": "log"}}], id="big-call"))
    session.append_message(ToolMessage(content="".join(f"line {i} ok; " for i in range(chars // 11))[:chars], tool_call_id="c1",
                                       name="read", id="big-result"))
    session.append_message(AIMessage(content="the log is fine", id="big-a"))
    resize(session)


class BrokenMemoModel:
    """A memo model whose provider is down: every call raises (and is counted)."""

    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, memo: dict[str, Any], messages: list[BaseMessage], attachments: Any, settings: Any) -> dict[str, Any]:
        self.calls += 1
        raise RuntimeError("provider unavailable")


class SmallContextSummarizer:
    """A summariser whose context holds 32,000 characters: above it, it raises (as a provider would)."""

    def __init__(self, limit: int = 32_000) -> None:
        self.limit, self.calls, self.seen, self.broken = limit, 0, [], False

    def __call__(self, summary: str, messages: list[BaseMessage], settings: Any) -> str:
        self.calls += 1
        sent = len(summary) + sum(len(m.text) for m in messages)
        if self.broken or sent > self.limit:
            raise RuntimeError(f"context length exceeded ({sent} characters)")
        self.seen.extend(m.id for m in messages)
        # names what it was fed, by id and by its opening words (a summary that takes in its input)
        return ("Overview: the conversation\nKey facts and decisions:\n- " + ", ".join(sorted({m.id or "" for m in messages}))[:200]
                + "\n- " + "; ".join(str(m.text)[:30] for m in messages)[:300])


def window_tokens(session: Session) -> int:
    return sum(session.tokens_of(m) for m in session.current_chat_history)


def test_an_oversize_message_is_folded_in_bounded_pieces_and_never_wedges_summary_mode() -> None:
    summarizer = SmallContextSummarizer()
    session = Session(summary_handler=summarizer).configure(mode="summary", limit={"tokens": 4000})
    for i in range(3):
        turn(session, i)
    oversize_tool_turn(session)
    for i in range(3, 63):
        turn(session, i)
        assert window_tokens(session) <= 2 * 4000  # the stored window stays bounded
    assert summarizer.calls <= 40  # bounded: the oversize result went in pieces, once
    assert session.memo_cursor >= len(session.full_chat_history) - len(session.current_chat_history)
    assert "big-result" in summarizer.seen  # folded, never skipped
    shown = {m.id for m in session.view().messages}
    folded = set(summarizer.seen)
    assert all(m.id in shown or m.id in folded for m in session.full_chat_history)  # nothing neither shown nor folded


def test_an_oversize_message_is_folded_in_bounded_pieces_in_memo_mode() -> None:
    calls: list[int] = []

    def memo_model(memo: dict[str, Any], messages: list[BaseMessage], attachments: Any, settings: Any) -> dict[str, Any]:
        sent = sum(len(m.text) for m in messages)
        calls.append(sent)
        if sent > 32_000:
            raise RuntimeError("context length exceeded")
        return {**memo, "seen": sorted({*memo.get("seen", []), *(m.id for m in messages)})[-50:]}

    session = Session(memo_update_handler=memo_model).use_memo()
    session.set_settings("session.limit.tokens", 4000)
    for i in range(3):
        turn(session, i)
    oversize_tool_turn(session)
    for i in range(3, 63):
        turn(session, i)
        assert window_tokens(session) <= 2 * 4000
    assert max(calls) <= 32_000 and len(calls) <= 40
    assert session.memo_cursor >= len(session.full_chat_history) - len(session.current_chat_history)


def test_a_failing_summariser_backs_off_in_turns_the_window_stays_bounded_and_the_cursor_resumes() -> None:
    summarizer = SmallContextSummarizer()
    session = Session(summary_handler=summarizer).configure(mode="summary", limit={"tokens": 2000})
    for i in range(5):
        turn(session, i)
    summarizer.broken = True
    before = summarizer.calls
    for i in range(5, 65):
        turn(session, i)
        assert window_tokens(session) <= 2 * 2000
    assert summarizer.calls - before <= 10  # exponential back-off, not a call every turn
    assert session.view().tokens <= 2000
    summarizer.broken = False
    for i in range(65, 100):
        turn(session, i)
    full = session.full_chat_history
    assert session.memo_cursor >= len(full) - len(session.current_chat_history)  # resumed and caught up
    assert len(summarizer.seen) == len(set(summarizer.seen))  # each message folded once
    folded = set(summarizer.seen)
    assert all(m.id in folded for m in full[: len(full) - len(session.current_chat_history)])  # nothing lost


def test_a_failing_memo_model_under_a_char_limit_backs_off_and_the_prompt_stays_bounded() -> None:
    broken = BrokenMemoModel()
    session = Session(memo_update_handler=broken).use_memo(chars=600)
    for i in range(60):
        turn(session, i, size=40)
        assert sum(len(m.text) for m in session.view().messages) <= 2 * 600
    assert broken.calls <= 10


def test_the_back_off_doubles_in_turns_a_forced_resize_retries_and_the_record_survives_a_save(tmp_path: Any) -> None:
    from session_graph.compression.backoff import failed, fold_suspended, prune_unpinned

    waits = []
    memo: dict[str, Any] = {}
    for turn_number in range(10, 17):
        memo = {"fold_failure": failed(memo, 4, turn_number)}
        waits.append(memo["fold_failure"]["retry"] - turn_number)
    assert waits == [0, 2, 4, 8, 16, 32, 64]
    assert fold_suspended(memo, 20, False) and not fold_suspended(memo, 20, "deep") and prune_unpinned(memo)
    assert failed({}, 5, 30)["count"] == 1
    session = Session(summary_handler=SmallContextSummarizer()).configure(mode="summary", limit={"tokens": 2000})
    session._state.fold_records["fold_failure"] = {"cursor": 0, "count": 3, "turn": 0, "retry": 10**6}
    session.memo["summary"] = "Overview: x"
    assert session.memo_for_model == {"summary": "Overview: x"}  # never shown to a model
    for i in range(3):
        turn(session, i)
    assert session.memo_cursor == 0  # suspended
    session.resize(force="deep")  # a forced resize retries at once
    assert session.memo_cursor > 0 and "fold_failure" not in session._state.fold_records and "fold_failure" not in session.memo


def context_shown(session: Session) -> Any:
    return next(m for m in session.view().messages if (m.id or "").endswith((":memo", ":summary")))


def test_a_nested_memo_of_short_values_is_shown_shortened_valid_and_fills_its_room() -> None:
    import json

    from session_graph.compression.context import MEMO_HEADER

    facts = {f"fact_{i:04d}": f"v{i * 7919 % 10000}" for i in range(2000)}
    session = Session(memo_update_handler=lambda memo, messages, attachments, settings: {"facts": facts, "user": "Ann"})
    session.use_memo()
    session.set_settings("session.limit.tokens", 4000)
    session.set_settings("session.summary.reserve_tokens", 500)
    for i in range(3):
        turn(session, i)
    session.resize(force="deep")
    shown = context_shown(session)
    memo = json.loads(shown.text[len(MEMO_HEADER) :])  # valid JSON
    tokens = session.tokens_of(shown)
    assert 0.8 * 500 <= tokens <= 500  # the room is used, not an empty shell
    assert memo["user"] == "Ann" and "fact_1999" in memo["facts"] and "fact_0000" not in memo["facts"]  # newest entries
    marks = shown.response_metadata["session_graph"]
    assert marks["shortened"] is True and marks["shortening"]["items_dropped"] > 1000


def test_a_summary_whose_knowledge_is_one_long_item_is_cut_visibly_keeping_its_newest_part() -> None:
    knowledge = "- seen " + ", ".join(str(i) for i in range(2000))
    reply = f"Overview: support work\nKey facts and decisions:\n{knowledge}\nOpen tasks:\n- none"
    session = Session(summary_handler=lambda summary, messages, settings: reply).configure(mode="summary", limit={"tokens": 4000})
    session.set_settings("session.summary.reserve_tokens", 500)
    for i in range(3):
        turn(session, i)
    session.resize(force="deep")
    shown = context_shown(session)
    tokens = session.tokens_of(shown)
    assert 0.8 * 500 <= tokens <= 500
    from session_graph.compression.context import summary_body

    text = summary_body(shown.text)  # one JSON string after the header
    assert "Key facts and decisions:\n- [...] " in text and "1999" in text and "Open tasks:\n- none" in text
    assert shown.response_metadata["session_graph"]["shortening"]["sections_cut"] == ["Key facts and decisions:"]


def test_a_prose_summary_keeps_its_newest_part() -> None:
    prose = "One long paragraph of prose without structure, sentence number {}. "
    reply = "".join(prose.format(i) for i in range(400))
    session = Session(summary_handler=lambda summary, messages, settings: reply).configure(mode="summary", limit={"tokens": 4000})
    session.set_settings("session.summary.reserve_tokens", 300)
    for i in range(3):
        turn(session, i)
    session.resize(force="deep")
    shown = context_shown(session)
    assert 0.8 * 300 <= session.tokens_of(shown) <= 300
    assert "sentence number 399." in shown.text and "[...] " in shown.text and "number 0." not in shown.text


def test_a_model_that_will_not_compress_is_asked_at_most_once_per_doubling_and_the_prompt_stays_bounded() -> None:
    from langchain_core.language_models import BaseChatModel
    from langchain_core.outputs import ChatGeneration, ChatResult

    class Stubborn(BaseChatModel):
        """Adds a line per message to the summary it is fed; asked to compress, gives it back unchanged."""

        folds: int = 0
        compressions: int = 0
        largest_prompt: int = 0

        @property
        def _llm_type(self) -> str:
            return "stubborn"

        def _generate(self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kwargs: Any) -> ChatResult:
            self.largest_prompt = max(self.largest_prompt, sum(len(m.text) for m in messages))
            body = messages[-1].text
            if messages[0].text.startswith("Rewrite"):
                self.compressions += 1
                reply = body
            else:
                self.folds += 1
                summary, new = body.split("Current summary:\n", 1)[1].split("\n\nNew messages:\n", 1)
                lines = summary.splitlines() if not summary.startswith("(none") else ["Key facts and decisions:"]
                reply = "\n".join(lines + [f"- {line[:60]}" for line in new.splitlines()])
            return ChatResult(generations=[ChatGeneration(message=AIMessage(content=reply))])

    model = Stubborn()
    session = Session(model=model).configure(mode="summary", limit={"tokens": 2000})
    for i in range(300):
        turn(session, i)
    assert model.folds >= 3
    assert model.compressions <= 2  # at most one per doubling; the stored summary is shortened without the model
    assert model.largest_prompt < 16_000  # each fold is fed a bounded summary
    shown = context_shown(session)
    assert session.tokens_of(shown) <= 512 and session._state.fold_records["compression_refused"] > 512
    assert "q299" in session.memo["summary"] or any("q299" in m.text for m in session.current_chat_history)


def test_a_system_message_added_mid_conversation_can_be_moved_to_the_front_or_merged() -> None:
    from langchain_core.messages import SystemMessage

    from session_graph import SettingsError

    session = Session().configure(limit={"tokens": 400})
    session.append_message(SystemMessage(content="You are terse.", id="sys"))
    session.append_message(HumanMessage(content="hello", id="u0"))
    session.append_message(AIMessage(content="hi", id="a0"))
    session.append_message(SystemMessage(content="From now on answer in French.", id="late"))
    session.append_message(HumanMessage(content="and now?", id="u1"))
    kept = session.view()
    assert [m.id for m in kept.messages] == ["sys", "u0", "a0", "late", "u1"]  # the default: where it was said
    session.set_settings("session.view.system_messages", "front")
    front = session.view()
    assert [m.id for m in front.messages] == ["sys", "late", "u0", "a0", "u1"] and front.tokens == kept.tokens
    session.set_settings("session.view.system_messages", "merge")
    merged = session.view()
    assert [m.type for m in merged.messages] == ["system", "human", "ai", "human"]
    assert merged.messages[0].text == "You are terse.\n\nFrom now on answer in French."
    assert merged.messages[0].response_metadata["session_graph"]["merged"] == ["sys", "late"]
    assert merged.tokens <= 400 and merged.tokens == sum(session.tokens_of(m) for m in merged.messages) + 3
    assert [m.id for m in session.current_chat_history] == ["sys", "u0", "a0", "late", "u1"]  # histories unchanged
    try:
        session.set_settings("session.view.system_messages", "first")
    except SettingsError as error:
        assert "'keep', 'front' or 'merge'" in str(error)
    else:
        raise AssertionError("an unknown value must be refused")


def test_a_failing_memo_model_under_a_message_limit_keeps_the_window_to_its_count() -> None:
    broken = BrokenMemoModel()
    session = Session(memo_update_handler=broken).use_memo(messages=10)
    for i in range(60):
        turn(session, i, size=20)
        assert len(session.current_chat_history) <= 2 * 10
    assert broken.calls <= 10 and session.memo_cursor == 0 and len(session.full_chat_history) == 120  # nothing lost


def test_the_async_path_folds_an_oversize_message_in_pieces_and_backs_off_the_same() -> None:
    import asyncio

    sent: list[int] = []
    broken = [False]

    async def memo_model(memo: dict[str, Any], messages: list[BaseMessage], attachments: Any, settings: Any) -> dict[str, Any]:
        sent.append(sum(len(m.text) for m in messages))
        if broken[0]:
            raise RuntimeError("provider unavailable")
        return {"n": memo.get("n", 0) + len(messages)}

    async def run() -> Session:
        session = Session(memo_update_handler=memo_model).use_memo()
        session.set_settings("session.limit.tokens", 4000)
        session.append_message(HumanMessage(content="read it", id="q"))
        session.append_message(ToolMessage(content="word " * 40_000, tool_call_id="c", name="read", id="big"))
        await session.async_resize("deep")
        assert max(sent) < 40_000 and 2 <= len(sent) <= 1 + 16 and session.memo_cursor == 2  # at most 16 pieces
        folds.append(len(sent))
        broken[0] = True
        for i in range(40):
            session.append_message(HumanMessage(content=f"q{i} " * 20, id=f"u{i}"))
            session.append_message(AIMessage(content=f"a{i} " * 20, id=f"a{i}"))
            if session.judge_resize():
                with contextlib.suppress(MemoUpdateError):
                    await session.async_resize()
        return session

    folds: list[int] = []
    session = asyncio.run(run())
    assert len(sent) - folds[0] <= 10  # a back-off while it fails, not a call every turn
    assert session.view().tokens <= 4000 and len(session.full_chat_history) == 82
