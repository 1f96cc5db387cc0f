"""Replies recorded from a real small model (tests/data/real-model-replies.json) replayed through
the library: every memo reply gives a memo, every summary reply a summary, the cut extraction
a bounded refusal with its reason, and the fold that ignored what it was fed is not pruned."""

from __future__ import annotations

import json
from pathlib import Path
import re
from typing import Any

from conftest import Api, fake_model
from langchain_core.messages import AIMessage
import pytest

from session_graph import MemoryReplyError, MemoUpdateError, Session
from session_graph.compression.memo import parse_memo_reply
from session_graph.llm.replies import summary_text
from session_graph.memory.replies import parse_decisions, parse_extraction, parse_summary

DATA = json.loads((Path(__file__).parent / "data" / "real-model-replies.json").read_text())
REPLIES: list[dict[str, Any]] = DATA["replies"]


def of_kind(kind: str) -> list[dict[str, Any]]:
    return [r for r in REPLIES if r["kind"] == kind]


def fed(entry: dict[str, Any]) -> list[dict[str, str]]:
    """The messages a recorded fold was fed, back from its prompt's transcript."""
    body = entry["prompt"][-1]["text"].split("New messages:\n", 1)[1]
    turns = re.split(r"^(user|assistant): ", body, flags=re.MULTILINE)[1:]
    return [{"role": role, "content": text.strip()} for role, text in zip(turns[::2], turns[1::2], strict=True)]


def previous_summary(entry: dict[str, Any]) -> str:
    return entry["prompt"][-1]["text"].split("Current summary:\n", 1)[1].split("\n\nNew messages:\n", 1)[0]


def test_the_recording_holds_every_kind() -> None:
    assert len(of_kind("memo_fold")) == 6 and len(of_kind("summary_fold")) == 4
    assert {r["kind"] for r in REPLIES} >= {"commit_summarize", "commit_extract", "commit_decide"}


@pytest.mark.parametrize("index", range(6))
def test_every_recorded_memo_reply_gives_a_memo(index: int) -> None:
    reply = of_kind("memo_fold")[index]["reply"]
    memo = parse_memo_reply(AIMessage(content=reply))
    assert memo["hard_constraints"] == {"budget": "$48,500", "deadline": "March 14", "compliance": "EU"}
    assert "memo" not in memo  # the wrapper is taken off, never stored as a fact


def test_a_memo_session_fed_the_recorded_replies_accepts_all_six_folds() -> None:
    replies = [r["reply"] for r in of_kind("memo_fold")]
    session = Session(model=fake_model(*replies)).use_memo(messages=2)
    refused = 0
    for turn in range(6):
        session.append_message({"role": "user", "content": f"turn {turn}: the migration plan, part {turn}"})
        session.append_message({"role": "assistant", "content": f"noted part {turn}"})
        try:
            session.resize("lite")
        except MemoUpdateError:
            refused += 1
    assert refused == 0
    assert session.memo_for_model == parse_memo_reply(AIMessage(content=replies[-1]))
    assert "Redis" in json.dumps(session.memo_for_model)  # the sixth fold's facts are in
    assert all(record.error is None for record in session.trace)


@pytest.mark.parametrize("index", range(4))
def test_every_recorded_summary_reply_gives_a_summary(index: int) -> None:
    entry = of_kind("summary_fold")[index]
    text = summary_text(AIMessage(content=entry["reply"]))
    assert text.startswith("Overview: Priya Raman") and "$48,500" in text


def test_a_summary_without_its_sections_is_stored_and_shown() -> None:
    entry = of_kind("summary_fold")[0]  # one Overview paragraph: no key facts, no user intent, no tasks
    session = Session(model=fake_model(entry["reply"])).configure(mode="summary")
    session.set_settings("session.resize.every_n_turns", 0)
    for message in fed(entry):
        session.append_message(message)
    session.resize("lite")
    assert session.memo["summary"] == entry["reply"]
    shown = [m.text for m in session.view().messages if m.type == "system"]
    assert any("Priya Raman, head of platform" in text for text in shown)  # what the model sees


def summary_session(entry: dict[str, Any], *replies: str) -> tuple[Session, Any]:
    """A summary session at the recorded fold: the previous summary in place, the fed messages
    in the window and the recorded model answering ``replies``."""
    model = fake_model(*replies)
    session = Session(model=model).configure(mode="summary")
    session.set_settings("session.resize.every_n_turns", 0)
    session.memo["summary"] = previous_summary(entry)
    for message in fed(entry):
        session.append_message(message)
    return session, model


def test_the_recorded_fold_that_ignored_its_messages_is_retried_then_not_pruned(api: Api) -> None:
    entry = of_kind("summary_fold")[3]  # byte-identical to the previous summary, 4 new messages fed
    assert entry["reply"].strip() == previous_summary(entry).strip()
    session, model = summary_session(entry, entry["reply"], entry["reply"])
    before = list(session.current_chat_history)
    with pytest.raises(MemoUpdateError, match="ignored the messages it was fed") as caught:
        api.resize(session, "lite")
    assert len(model.prompts) == 2  # asked once more, never more
    assert session.current_chat_history == before and session.memo_cursor == 0  # nothing pruned
    assert session.memo["summary"] == previous_summary(entry)
    assert "previous summary unchanged although 4 new message(s)" in str(caught.value)
    assert "ignored the messages" in (session.trace[-1].error or "")  # marked in the trace


def test_a_retry_that_takes_the_messages_in_is_kept(api: Api) -> None:
    entry = of_kind("summary_fold")[3]
    better = previous_summary(entry) + "\nOpen tasks:\n- Move the cache to Redis; meet Thursday on the rehearsal plan."
    session, model = summary_session(entry, entry["reply"], better)
    api.resize(session, "lite")
    assert len(model.prompts) == 2 and session.memo["summary"] == better
    assert session.memo_cursor == len(session.full_chat_history)


def test_a_fold_of_small_talk_may_leave_the_summary_as_it_was() -> None:
    session = Session(model=fake_model("Overview: planning the migration.")).configure(mode="summary")
    session.set_settings("session.resize.every_n_turns", 0)
    session.memo["summary"] = "Overview: planning the migration."
    session.append_message({"role": "user", "content": "ok, thanks!"})
    session.append_message({"role": "assistant", "content": "You're welcome."})
    session.resize("lite")  # nothing new to take in: accepted, not retried
    assert session.memo_cursor == 2


def test_the_recorded_commit_replies() -> None:
    overview, abstract = parse_summary(AIMessage(content=of_kind("commit_summarize")[0]["reply"]))
    assert overview.startswith("# Session Summary") and abstract.startswith("Migration of shipment-tracking")
    with pytest.raises(MemoryReplyError, match="truncated JSON object") as caught:
        parse_extraction(AIMessage(content=of_kind("commit_extract")[0]["reply"]))
    assert caught.value.step == "extract"
    cut = AIMessage(content=of_kind("commit_extract")[0]["reply"], response_metadata={"finish_reason": "length"})
    with pytest.raises(MemoryReplyError, match="output cap"):
        parse_extraction(cut)
    decisions = parse_decisions(AIMessage(content=of_kind("commit_decide")[0]["reply"]))
    assert [(d.candidate, d.op, d.targets) for d in decisions] == [(0, "update", ["m1"]), (1, "update", ["m1"])]


def test_a_refused_memo_reply_leaves_its_reason_in_the_trace(api: Api) -> None:
    session = Session(model=fake_model('```json\n{"memo": {"budget": "$48,500", "dead')).use_memo(messages=2)
    for message in fed(of_kind("summary_fold")[3]):
        session.append_message(message)
    with pytest.raises(MemoUpdateError):
        api.resize(session, "lite")
    error = session.trace[-1].error or ""
    assert "stops in the middle of a JSON object" in error and session.memo_cursor == 0


def test_the_recorded_cut_extraction_makes_the_commit_partial_with_its_reason() -> None:
    from langgraph.store.memory import InMemoryStore

    from session_graph.memory import MemoryConfig

    store = InMemoryStore()
    replies = [of_kind("commit_summarize")[0]["reply"], of_kind("commit_extract")[0]["reply"]]
    session = Session(model=fake_model(*replies), memory=MemoryConfig(store=store, user="priya"))
    for message in fed(of_kind("summary_fold")[0]):
        session.append_message(message)
    result = session.commit()
    assert result["status"] == "partial" and result["memories_extracted"] == 0
    assert any("extract" in error and "truncated JSON object" in error for error in result["errors"])
    assert list(store.search(("user",))) == []  # nothing written from the cut reply
