"""Summaries and memos bounded by the model, never by a cut; the reserve follows what is held;
prunes keep what fits; folds are token-bounded and not made on every turn."""

from __future__ import annotations

import json
from typing import Any

from conftest import Api, chat, fake_model, memo_reply
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage, trim_messages
import pytest

from session_graph import Session, SettingsError
from session_graph.accounting.budget import plan_prune
from session_graph.accounting.tokens import message_tokens
from session_graph.compression.context import MEMO_HEADER, SUMMARY_HEADER, summary_content


def memo_shown(session: Session) -> Any:
    message = next(m for m in session.view().messages if (m.id or "").endswith(":memo"))
    assert message.text.startswith(MEMO_HEADER)
    return message, json.loads(message.text[len(MEMO_HEADER) :])  # always valid JSON


def memo_session(model: Any, budget: int = 600, reserve: int = 60) -> Session:
    session = Session(model=model).use_memo(messages=2)
    session.set_settings("session.limit.tokens", budget)
    session.set_settings("session.summary.reserve_tokens", reserve)
    return session


def test_an_over_budget_memo_gets_one_compression_request_and_the_compression_is_kept(api: Api) -> None:
    big = {"facts": [f"fact number {i} about the export" for i in range(80)], "user": "Ann"}
    small = {"facts": ["the export is fixed"], "user": "Ann"}
    model = fake_model(memo_reply(big), memo_reply(small))
    session = chat(memo_session(model), 3)
    api.resize(session, "lite")
    assert len(model.prompts) == 2
    fold, compression = model.prompts
    assert "within 44 tokens" in fold[0].content  # the budget is stated (reserve 60 less the header)
    assert "Rewrite this memo" in compression[0].content and "within 60 tokens" in compression[0].content
    assert json.loads(compression[1].content) == big  # the whole memo goes in, a shorter one comes out
    assert session.memo_for_model == small


@pytest.mark.parametrize("compression", ["not json at all", json.dumps({"memo": "a string"}), None])
def test_when_the_compression_fails_the_memo_is_shortened_without_the_model_and_not_asked_again(
    api: Api, compression: str | None
) -> None:
    big = {"first": "old " * 30, "facts": [f"fact {i}" for i in range(60)], "newest": "the newest key"}
    replies = [memo_reply(big)] + ([compression] if compression is not None else [memo_reply(big)])
    model = fake_model(*replies)
    session = chat(memo_session(model), 3)
    api.resize(session, "lite")
    assert len(model.prompts) == 2  # one compression request, never more
    stored = session.memo_for_model  # shortened as the view shortens it: what the model would see
    assert stored["newest"] == "the newest key" and stored["facts"][-1] == "fact 59" and "fact 0" not in stored["facts"]
    refused = session._state.fold_records["compression_refused"]
    assert refused > 60  # the size the model would not compress
    message, shown = memo_shown(session)
    assert message_tokens(message, session.counter) <= 60 and shown == stored
    grown = {**stored, "more": [f"fact {i}" for i in range(60, 70)]}
    chat(session, 2, start=3)
    model.responses, model.i = [memo_reply(grown)], 0
    api.resize(session, "lite")
    assert len(model.prompts) == 3  # over its budget again, but not doubled: not asked again
    assert json.loads(model.prompts[-1][1].content.split("Current memo: ", 1)[1].split("\n\nNew messages:")[0]) == {"memo": stored}
    assert message_tokens(memo_shown(session)[0], session.counter) <= 60
    chat(session, 2, start=5)
    model.responses, model.i = [memo_reply(small := {"ok": 1})], 0
    api.resize(session, "lite")
    assert session.memo_for_model == small and "compression_refused" not in session._state.fold_records  # compliant again


def test_a_summary_over_budget_is_compressed_once_and_the_next_fold_gets_it_whole(api: Api) -> None:
    long = "Overview: x\nKey facts and decisions:\n" + "\n".join(f"- detail {i}" for i in range(200))
    short = "Overview: x\nKey facts and decisions:\n- detail 199"
    model = fake_model(long, short, short + "\n- one more")
    session = Session(model=model).configure(mode="summary", limit={"tokens": 400})
    session.set_settings("session.summary.reserve_tokens", 80)
    session.set_settings("session.resize.every_n_turns", 0)
    chat(session, 20, size=40)
    api.resize(session, "lite")
    assert [p[0].content.split(" ")[0] for p in model.prompts] == ["Keep", "Rewrite"]
    assert session.memo["summary"] == short
    chat(session, 10, size=40, start=20)
    api.resize(session, "lite")
    assert model.prompts[-1][1].content.startswith("Current summary:\n" + short + "\n\nNew messages:")


@pytest.mark.parametrize("compression", ["", "   ", "<think>only thinking</think>"])
def test_a_summary_compression_with_no_text_shortens_the_summary_without_the_model(api: Api, compression: str) -> None:
    long = "Overview: x\nKey facts and decisions:\n" + "\n".join(f"- detail {i}" for i in range(200))
    model = fake_model(long, compression)
    session = Session(model=model).configure(mode="summary", limit={"tokens": 400})
    session.set_settings("session.summary.reserve_tokens", 80)
    chat(session, 20, size=40)
    api.resize(session, "lite")
    assert len(model.prompts) == 2  # documented fallback, no error
    stored = session.memo["summary"]
    assert stored.startswith("Overview: x\nKey facts and decisions:\n") and stored.endswith("- detail 199")
    assert "- detail 0\n" not in stored and message_tokens(SystemMessage(content=summary_content(stored)), session.counter) <= 80
    assert session.view().tokens <= 400


def test_the_reserve_follows_what_the_summary_holds() -> None:
    session = Session(summary_handler=lambda summary, messages, settings: "tiny").configure(mode="summary", limit={"tokens": 1000})
    session.set_settings("session.summary.reserve_tokens", 400)
    session.set_settings("session.resize.every_n_turns", 0)
    session.append_message(SystemMessage(content="sys"))
    turn = 0
    while session.judge_resize() is None:
        chat(session, 1, size=40, start=turn)
        turn += 1
    session.resize()
    assert session.memo["summary"] == "tiny"
    while session.judge_resize() is None:  # the window grows into what the short summary leaves
        chat(session, 1, size=40, start=turn)
        turn += 1
    before_resize = session.view()
    assert before_resize.tokens <= 1000
    assert before_resize.tokens > 1000 - 400  # holding the whole 400-token reserve would stop it here


def test_a_prune_keeps_what_trim_messages_keeps_when_the_headroom_cut_falls_mid_turn() -> None:
    # turn 1: user, then a long tool turn; turn 2: a short exchange; the headroom cut falls inside turn 1's tools
    roles = ["user", "assistant", "tool", "assistant", "tool", "assistant", "user", "assistant"]
    tokens = [10, 20, 400, 20, 400, 100, 10, 40]
    plan = plan_prune(roles, tokens, chars=0, messages=0, tokens=tokens, max_tokens=800, full_tokens=1000)
    assert plan.keep_from == 0  # the whole of turn 1 fits the full budget: keep it (trim_messages does),
    # where opening on turn 2 after the headroom cut would keep only 50 tokens
    roomy = plan_prune(roles, tokens, chars=0, messages=0, tokens=tokens, max_tokens=800, full_tokens=800)
    assert roomy.keep_from == 6  # without a fuller option the window opens on the next turn


def tool_turn(i: int, result: int) -> list[Any]:
    return [
        HumanMessage(content=f"question {i} " * 5),
        AIMessage(content="", tool_calls=[{"id": f"c{i}", "name": "search", "args": {"q": str(i)}}]),
        ToolMessage(content=f"result {i} " * result, tool_call_id=f"c{i}"),
        AIMessage(content=f"answer {i} " * 10),
    ]


def test_after_resizes_the_window_keeps_at_least_what_trim_messages_keeps_at_the_low_water_mark() -> None:
    # a prune cuts to the low-water mark (session.tokens.prune_to_ratio of the budget), not to the
    # budget: the turns after it fit without a resize (hysteresis); it never keeps less than
    # trim_messages keeps under that mark, nor more than the budget
    session = Session().configure(limit={"tokens": 2000})
    counter = session.counter
    low_water = int(2000 * 0.8)

    def counter_fn(messages: list[Any]) -> int:
        return sum(message_tokens(m, counter) for m in messages)

    worst, resizes = 10.0, 0
    for i in range(60):
        for message in tool_turn(i, 40 + (i * 37) % 300):
            session.append_message(message)
        if session.judge_resize():
            session.resize()
            resizes += 1
            trimmed = trim_messages(session.full_chat_history, max_tokens=low_water - 3, token_counter=counter_fn,
                                    strategy="last", start_on="human")
            worst = min(worst, (session.view().tokens - 3) / max(1, counter_fn(trimmed)))
        assert session.view().tokens <= 2000
    assert resizes and worst >= 1.0


def test_under_a_token_budget_deep_folds_are_token_bounded(api: Api) -> None:
    seen: list[int] = []

    def handler(memo, messages, attachments, settings):  # type: ignore[no-untyped-def]
        seen.append(sum(message_tokens(m, session.counter) for m in messages))
        return {"folds": len(seen)}

    session = Session(memo_update_handler=handler).use_memo()
    session.set_settings("session.limit.tokens", 4000)
    session.set_settings("session.memo.chunk_tokens", 500)
    chat(session, 60, size=200)
    api.resize(session, "deep")
    assert len(seen) > 2 and max(seen) <= 500
    assert session.memo_cursor == len(session.full_chat_history)


def test_memo_mode_does_not_call_the_model_on_every_turn_once_the_window_is_full() -> None:
    model = fake_model(*[memo_reply({"n": i}) for i in range(200)])
    session = Session(model=model).use_memo()
    session.set_settings("session.limit.tokens", 1500)
    resizes = 0
    for i in range(120):
        chat(session, 1, size=120, start=i)
        if session.judge_resize():
            session.resize()
            resizes += 1
        assert session.view().tokens <= 1500
    folded_once = [m for m in session.full_chat_history[: session.memo_cursor]]
    assert len(model.prompts) <= 120 / 5 and resizes <= 120 / 3
    lines = [line for p in model.prompts for line in p[1].content.split("New messages:\n", 1)[1].splitlines()]
    assert len(lines) == len(folded_once)  # each folded message sent exactly once


@pytest.mark.parametrize(
    ("key", "value", "words"),
    [
        ("session.memo.chunk_tokens", 0, "must be a whole number > 0"),
        ("session.memo.chunk_tokens", -5, "must be a whole number > 0"),
        ("session.memo.fold_min_ratio", 0, "must be a number in"),
    ],
)
def test_bad_fold_settings_are_clear_errors(key: str, value: Any, words: str) -> None:
    with pytest.raises(SettingsError, match=words):
        Session().set_settings(key, value)


def test_a_reserve_larger_than_the_budget_is_held_to_half_of_it() -> None:
    session = Session().configure(mode="summary", limit={"tokens": 100})
    session.set_settings("session.summary.reserve_tokens", 5000)
    assert session.settings.resolved().reserve_tokens == 50


def test_summary_header_and_memo_header_are_what_the_model_sees() -> None:
    assert SUMMARY_HEADER.endswith("\n") and MEMO_HEADER.endswith("\n")
