"""Memo mode: folding through a chat model, chunks, cursor, failures and retries."""

from __future__ import annotations

import json
from typing import Any

from conftest import Api, BrokenModel, chat, fake_model, memo_reply
from langchain_core.messages import AIMessage, HumanMessage
import pytest

from session_graph import MemoUpdateError, Session, message_chars


def sent_lines(prompt: list[Any]) -> list[str]:
    """The transcript lines of a memo prompt (one per message)."""
    return prompt[1].content.split("New messages:\n", 1)[1].split("\n\nAttachments: ")[0].splitlines()


def sent_memo(prompt: list[Any]) -> dict[str, Any]:
    return json.loads(prompt[1].content.split("Current memo: ", 1)[1].split("\n\nNew messages:")[0])["memo"]


def test_lite_folds_everything_past_the_cursor_then_prunes(api: Api) -> None:
    model = fake_model(memo_reply({"user": "likes tea"}), memo_reply({"user": "likes tea", "city": "Oslo"}))
    session = chat(Session(model=model).use_memo(messages=2), 2)
    window = api.resize(session, "lite")
    assert session.memo_for_model == {"user": "likes tea"}
    assert session.memo["last_resize"] == {"type": "lite", "turn": 2, "reason": "force"}
    assert session.memo_cursor == 4 and len(window) == 2
    (first,) = model.prompts
    assert [line.rstrip('."') for line in sent_lines(first)] == ['U: "u0', 'A: "a0', 'U: "u1', 'A: "a1']  # lean roles, quoted texts
    assert "Roles: U user, A assistant, T tool result, S system." in first[0].content
    assert "Update the memo dictionary" in first[0].content and "within 496 tokens" in first[0].content
    chat(session, 1, start=2)
    api.resize(session, "lite")
    second = model.prompts[1]
    assert [line.split(": ")[1][1:3] for line in sent_lines(second)] == ["u2", "a2"]  # never re-sent
    assert sent_memo(second) == {"user": "likes tea"}  # the model never sees last_resize
    assert session.memo["city"] == "Oslo" and session.memo_cursor == 6


def test_deep_folds_in_chunks_under_the_limit_and_passes_attachments(api: Api) -> None:
    replies = [memo_reply({"n": i}) for i in range(20)]
    model = fake_model(*replies)
    session = Session(model=model).use_memo(chars=120)
    session.append_message({"role": "user", "content": [
        {"type": "text", "text": "see"},
        {"type": "image_url", "image_url": {"url": "https://x.test/cat.png"}, "width": 10, "height": 20},
    ]})
    chat(session, 6)
    api.resize(session)
    assert len(model.prompts) >= 2
    folded = [line for prompt in model.prompts for line in sent_lines(prompt)]
    full = session.full_chat_history
    assert len(folded) == session.memo_cursor and session.memo_cursor >= len(full) - 2  # each once, in order, nothing twice
    window = {m.id for m in session.current_chat_history}
    assert all(m.id in window for m in full[session.memo_cursor :])  # a runt of a last chunk (counted as sent) waits in the window
    assert folded[0] == 'U: "see [image_url https://x.test/cat.png]"'
    attachments = json.loads(model.prompts[0][1].content.split("Attachments: ", 1)[1])
    assert attachments == [{"type": "image_url", "ref": "https://x.test/cat.png", "meta": {"width": 10, "height": 20}}]
    assert sum(message_chars(m) for m in session.current_chat_history) < 120


def test_chunks_are_planned_under_the_char_limit(api: Api) -> None:
    seen: list[list[Any]] = []

    def handler(memo, messages, attachments, settings):  # type: ignore[no-untyped-def]
        seen.append(messages)
        return {"chunks": len(seen)}

    session = chat(Session(memo_update_handler=handler).use_memo(chars=100), 10)
    api.resize(session)
    assert len(seen) > 1
    assert all(sum(message_chars(m) for m in chunk) < 100 for chunk in seen)
    assert [m for chunk in seen for m in chunk] == session.full_chat_history


@pytest.mark.parametrize(
    ("reply", "words"),
    [
        ("I updated the memo!", "holds no JSON object"),
        ('["a", "list"]', "holds no JSON object"),
        ('{"memo": "a string"}', 'must be {"memo"'),
        ('```json\n{"memo": {"a": 1, "b": [', "stops in the middle of a JSON object"),
        ('{"memo": {"a": 1}}\nor maybe\n{"memo": {"a": 2}}', "2 different JSON objects"),
    ],
)
def test_a_malformed_reply_is_an_error_never_the_memo(api: Api, reply: str, words: str) -> None:
    session = chat(Session(model=fake_model(reply)).use_memo(messages=2), 3)
    session.memo["old"] = "kept"
    with pytest.raises(MemoUpdateError, match=words) as caught:
        api.resize(session, "lite")
    assert session.memo_for_model == {"old": "kept"}  # the failure is recorded for the back-off only
    assert session.memo_cursor == 0 and caught.value.memo_cursor == 0 and caught.value.pending == 6
    assert len(session.current_chat_history) == 6  # nothing the memo does not cover left


def test_a_fenced_json_reply_is_accepted(api: Api) -> None:
    session = chat(Session(model=fake_model('```json\n{"memo": {"a": 1}}\n```')).use_memo(), 1)
    api.resize(session, "lite")
    assert session.memo_for_model == {"a": 1}


def test_a_failing_model_stops_pruning_at_the_cursor_and_a_retry_resumes(api: Api, broken_model: BrokenModel) -> None:
    calls: list[list[str]] = []
    fail_from = [2]

    def flaky(memo, messages, attachments, settings):  # type: ignore[no-untyped-def]
        calls.append([m.content[:2] for m in messages])
        if len(calls) >= fail_from[0]:
            raise TimeoutError("model timed out")
        return {**memo, "chunks": len(calls)}

    session = chat(Session(memo_update_handler=flaky).use_memo(chars=100), 10)
    full_before = list(session.full_chat_history)
    with pytest.raises(MemoUpdateError, match="model timed out") as caught:
        api.resize(session)
    error = caught.value
    assert isinstance(error.__cause__, TimeoutError)
    cursor = session.memo_cursor
    assert cursor == error.memo_cursor > 0  # the first chunk was folded and kept
    assert session.memo_for_model == {"chunks": 1}
    assert "last_resize" not in session.memo and session.last_resize_turn == 0
    window = session.current_chat_history
    assert window == session.full_chat_history[cursor:]  # pruned up to the cursor, not past it
    assert session.full_chat_history == full_before
    fail_from[0] = 10**6
    api.resize(session)
    resumed = calls[2]
    assert resumed[0] == full_before[cursor].content[:2]  # the retry starts at the cursor
    assert session.memo_cursor == len(full_before)
    assert session.memo["last_resize"]["type"] == "deep"


def test_a_model_exception_is_reported(api: Api, broken_model: BrokenModel) -> None:
    session = chat(Session(model=broken_model).use_memo(messages=2), 2)
    with pytest.raises(MemoUpdateError, match="provider unavailable"):
        api.resize(session, "lite")
    assert len(session.current_chat_history) == 4 and session.memo_for_model == {}
    assert session._state.fold_records["fold_failure"] == {"cursor": 0, "count": 1, "turn": 2, "retry": 2}  # retried on the next resize


def test_memo_mode_without_a_model_says_how_to_fix_it(api: Api) -> None:
    session = chat(Session().use_memo(messages=2), 2)
    with pytest.raises(MemoUpdateError, match=r"Session\(model=\.\.\.\)"):
        api.resize(session, "lite")
    assert len(session.current_chat_history) == 4


def test_a_handler_returning_a_non_dict_is_an_error(api: Api) -> None:
    session = chat(Session(memo_update_handler=lambda *a: ["not", "a", "dict"]).use_memo(), 1)
    with pytest.raises(MemoUpdateError, match="must return the updated memo as a dict"):
        api.resize(session, "lite")


def test_an_explicit_handler_wins_over_the_model(api: Api) -> None:
    model = fake_model(memo_reply({"from": "model"}))
    session = chat(Session(model=model, memo_update_handler=lambda memo, *a: {"from": "handler"}).use_memo(), 1)
    api.resize(session, "lite")
    assert session.memo_for_model == {"from": "handler"} and model.prompts == []


def test_async_memo_handler(api: Api) -> None:
    async def handler(memo, messages, attachments, settings):  # type: ignore[no-untyped-def]
        return {"count": memo.get("count", 0) + len(messages)}

    session = chat(Session(memo_update_handler=handler).use_memo(), 2)
    api.resize(session, "deep")
    assert session.memo_for_model == {"count": 4}


def test_inline_binary_is_never_sent_to_the_memo_model(api: Api) -> None:
    model = fake_model(memo_reply({}))
    session = Session(model=model).use_memo()
    blob = "QUJD" * 5000
    session.append_message(HumanMessage(content=[{"type": "image_url", "image_url": {"url": f"data:image/png;base64,{blob}"}}]))
    session.append_message(AIMessage(content="nice picture"))
    api.resize(session, "deep")
    assert blob not in model.prompts[0][1].content
    assert "inline:sha256:" in model.prompts[0][1].content


def test_lite_mode_never_calls_the_model(api: Api) -> None:
    model = fake_model()
    session = chat(Session(model=model).use_lite(messages=2), 5)
    api.resize(session)
    assert model.prompts == [] and len(session.current_chat_history) == 2
