"""A fold's chunks: every message folded once, and no model call spent on a runt of a chunk
whose messages were not about to leave the window (it waits and joins the next fold)."""

from __future__ import annotations

from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
import pytest

from session_graph import Session
from session_graph.resize.nodes.deep_chunk import sent_line

CHUNK = 600


@pytest.mark.parametrize("mode", ["summary", "memo"])
def test_no_runt_chunk_is_sent_for_messages_that_stay(mode: str) -> None:
    folds: list[list[BaseMessage]] = []

    def summarize(summary: str, messages: list[BaseMessage], settings: Any) -> str:
        folds.append(list(messages))
        return f"{summary} {len(messages)}".strip()

    def update(memo: dict[str, Any], messages: list[BaseMessage], attachments: Any, settings: Any) -> dict[str, Any]:
        folds.append(list(messages))
        return {"n": memo.get("n", 0) + len(messages)}

    session = Session().configure(mode=mode, limit={"tokens": 1500})
    session.set_settings("session.memo.chunk_tokens", CHUNK)
    if mode == "summary":
        session.set_summary_handler(summarize)
    else:
        session.set_memo_update_handler(update)
    for turn in range(120):
        words = 10 + (turn * 37) % 60  # uneven messages, so chunk ends fall anywhere
        session.append_message(HumanMessage(content=f"question {turn} " + "word " * words, id=f"q{turn}"))
        session.append_message(AIMessage(content=f"answer {turn} " + "text " * (words // 2), id=f"a{turn}"))
        before = len(folds)
        if session.judge_resize():
            session.resize()
        sent = folds[before:]
        window = {m.id for m in session.current_chat_history}
        if len(sent) >= 2 and sum(max(session.tokens_of(m), session.tokens_of(sent_line(m))) for m in sent[-1]) * 2 < CHUNK:  # as sent
            assert any(m.id not in window for m in sent[-1]), f"turn {turn}: a runt chunk of messages that all stayed"
    folded = [m.id for batch in folds for m in batch]
    assert len(folded) == len(set(folded))  # every message folded once
    assert set(folded) | {m.id for m in session.current_chat_history} == {m.id for m in session.full_chat_history}
    assert len(folds) >= 10  # the conversation did fold, many times


def test_under_a_char_limit_a_chunk_of_chinese_holds_about_chunk_tokens() -> None:
    folds: list[list[BaseMessage]] = []

    def update(memo: dict[str, Any], messages: list[BaseMessage], attachments: Any, settings: Any) -> dict[str, Any]:
        folds.append(list(messages))
        return {"n": memo.get("n", 0) + len(messages)}

    session = Session(memo_update_handler=update).use_memo(chars=60_000)
    session.set_settings("session.memo.chunk_tokens", 500)
    for turn in range(40):
        session.append_message(HumanMessage(content="数据导出任务失败了，请帮我看一下原因。" * 8, id=f"q{turn}"))  # ~150 CJK chars
        session.append_message(AIMessage(content="On the export job: roll back first, then measure. " * 3, id=f"a{turn}"))
    session.resize(True)
    assert len(folds) >= 10
    for batch in folds:  # each call about 500 tokens: ~150 CJK chars are ~150 tokens, not ~38
        cjk = sum(len(m.text) for m in batch if isinstance(m, HumanMessage))
        other = sum(len(m.text) for m in batch if isinstance(m, AIMessage))
        assert cjk + other / 4 <= 500
    assert sum(len(batch) for batch in folds) == 80  # every message once
