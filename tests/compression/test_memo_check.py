"""A memo-update reply that is not a memo of what the memo held is refused, never the new memo.

Recorded replies of a real small model (tests/data/real-model-replies.json) are legitimate
rewrites and pass; replies that drop the memo's knowledge (``{"status": "ok"}``) fail the fold,
which backs off with nothing lost, and the fold resumes once the model answers with a memo."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from conftest import Api, chat, fake_model, memo_reply
import pytest

from session_graph import MemoUpdateError, Session
from session_graph.compression.memo import parse_memo_reply
from session_graph.compression.memo_check import MIN_TERMS, dropped_reason, memo_terms

DATA = json.loads((Path(__file__).parents[1] / "data" / "real-model-replies.json").read_text())
FOLDS = [entry for entry in DATA["replies"] if entry["kind"] == "memo_fold"]
MEMO = parse_memo_reply(FOLDS[0]["reply"])  # a real model's first memo of the recorded conversation
NOT_A_MEMO = ['{"status": "ok"}', '{"result": "memo updated"}', '{"ok": true, "changes": 3}']


def current_memo(entry: dict[str, Any]) -> dict[str, Any]:
    text = entry["prompt"][-1]["text"].split("Current memo: ", 1)[1].split("\n\nNew messages:", 1)[0]
    data = json.loads(text)
    return data.get("memo", data) if set(data) == {"memo"} else data


def test_the_recorded_folds_keep_what_the_memo_held() -> None:
    later = [entry for entry in FOLDS if current_memo(entry)]
    assert len(later) >= 4 and len(memo_terms(MEMO)) >= MIN_TERMS
    for entry in later:  # each recorded fold of a non-empty memo is a legitimate update
        assert dropped_reason(current_memo(entry), parse_memo_reply(entry["reply"])) is None


@pytest.mark.parametrize("reply", NOT_A_MEMO)
def test_a_reply_that_is_not_a_memo_is_refused_with_what_it_keeps(reply: str) -> None:
    why = dropped_reason(MEMO, parse_memo_reply(reply))
    assert why is not None and f"of the {len(memo_terms(MEMO))} terms of the current memo" in why
    assert json.dumps(json.loads(reply))[:10] in why  # the culprit is shown


def test_a_restructured_memo_is_a_legitimate_rewrite() -> None:
    flat = {"facts": [f"{key}: {json.dumps(value)}" for key, value in MEMO.items()]}  # keys into one list
    assert dropped_reason(MEMO, flat) is None
    renamed = {f"section_{i}": value for i, value in enumerate(MEMO.values())}  # every key renamed
    assert dropped_reason(MEMO, renamed) is None
    assert dropped_reason({"a": "tiny memo"}, {"status": "ok"}) is None  # a memo under MIN_TERMS is not checked


def test_a_compression_keeps_a_share_in_proportion_to_its_room() -> None:
    big = {f"fact_{i:03d}": f"customer {i} prefers invoice layout {i * 7} in region {i % 13}" for i in range(90)}
    third = dict(list(big.items())[-30:])  # the newest third
    assert dropped_reason(big, third, room=1 / 3) is None  # asked for a third, kept a third
    assert dropped_reason(big, {"status": "ok"}, room=1 / 3) is not None
    ids = {"topic": "support work", "seen": [f"seen {n:04d}" for n in range(1, 401)]}
    ranged = {"topic": "support work", "seen": "0001:0400"}  # the same knowledge, as a range
    assert dropped_reason(ids, ranged, room=1 / 6) is None and dropped_reason(ids, ranged) is not None
    assert dropped_reason(ids, {"topic": "", "seen": []}, room=1 / 6) is not None  # the keys, emptied


def test_a_fold_reply_that_drops_the_memo_fails_then_resumes_with_nothing_lost(api: Api) -> None:
    recovered = {**MEMO, "city": "Oslo"}
    model = fake_model(memo_reply(MEMO), '{"status": "ok"}', '{"status": "ok"}', memo_reply(recovered))
    session = chat(Session(model=model).use_memo(messages=2), 2)
    api.resize(session, "lite")
    assert session.memo_for_model == MEMO
    cursor, history = session.memo_cursor, list(session.full_chat_history)
    chat(session, 2, start=2)
    with pytest.raises(MemoUpdateError, match=r"drops what the memo held, twice .*keeps \d+ of the \d+ terms"):
        api.resize(session, "lite")
    assert len(model.prompts) == 3  # asked once more, then the fold failed
    assert session.memo_for_model == MEMO  # the reply never replaced the memo
    assert session.memo_cursor == cursor and session._state.fold_records["fold_failure"]["count"] == 1
    assert session.current_chat_history == session.full_chat_history[cursor:]  # nothing left the window unfolded
    assert session.full_chat_history[: len(history)] == history
    api.resize(session, "lite")  # the first failure is retried on the next resize; the model answers a memo
    assert session.memo_for_model == recovered and session.memo_cursor == len(session.full_chat_history)
    assert "fold_failure" not in session._state.fold_records and "fold_failure" not in session.memo


def test_a_fluke_costs_one_more_call_not_a_failure(api: Api) -> None:
    model = fake_model(memo_reply(MEMO), '{"status": "ok"}', memo_reply({**MEMO, "city": "Oslo"}))
    session = chat(Session(model=model).use_memo(messages=2), 2)
    api.resize(session, "lite")
    chat(session, 2, start=2)
    api.resize(session, "lite")
    assert session.memo_for_model["city"] == "Oslo" and len(model.prompts) == 3


def test_a_compression_reply_that_drops_the_memo_is_shortened_without_the_model(api: Api) -> None:
    big = {f"fact_{i:03d}": f"customer {i} prefers invoice layout {i * 7} in region {i % 13}" for i in range(80)}
    model = fake_model(memo_reply(big), '{"status": "ok"}')
    session = chat(Session(model=model).configure(mode="memo", limit={"tokens": 1200}), 2)
    api.resize(session, "lite")
    kept = session.memo_for_model
    assert len(model.prompts) == 2 and "Rewrite this memo" in model.prompts[1][0].content  # compression asked once
    assert kept and "status" not in kept and set(kept) <= set(big)  # shortened from the memo, not replaced by the reply
    assert all(kept[key] == big[key] for key in kept if key in big and isinstance(kept[key], str) and len(kept[key]) == len(big[key]))
