"""Hysteresis for every limit kind: once a limit is reached, a resize is turns away, not every turn.

The message-count limit had no low-water mark (tokens have ``session.tokens.prune_to_ratio``,
chars ``session.resize.prune_to_ratio``): a prune cut the window to exactly the limit, so the
next turn went over it again and every turn past the limit ran a resize (a graph run, a trace
record, in an agent a second save; in memo and summary mode a fold whenever the cut reached
what the memo had not folded). The count limit now prunes to ``prune_to_ratio`` of itself, as
chars do (lite mode's ratio is 1.0 by default: its window keeps the limit's count).
"""

from __future__ import annotations

from itertools import pairwise
import json

from conftest import fake_model
from langchain_core.messages import AIMessage, HumanMessage
import pytest

from session_graph import Session

TURNS = 60


def play(session: Session, turns: int = TURNS) -> list[int]:
    """``turns`` user/assistant turns with a judge after each; the turns that resized."""
    resized = []
    for i in range(turns):
        session.append_message(HumanMessage(content=f"question {i} about the export", id=f"h{i}"))
        session.append_message(AIMessage(content=f"answer {i}: it runs nightly", id=f"a{i}"))
        if session.judge_resize():
            resized.append(i)
            session.resize()
    return resized


def memo_model():
    return fake_model(*[json.dumps({"memo": {"facts": [f"fold {n}"]}}) for n in range(TURNS * 2)])


@pytest.mark.parametrize("mode", ["memo", "summary"])
def test_a_count_limit_costs_a_model_call_every_few_turns_not_every_turn(mode: str) -> None:
    model = memo_model() if mode == "memo" else fake_model(*[f"Overview: fold {n} of the export talk." for n in range(TURNS * 2)])
    session = Session(model=model).configure(mode=mode, limit={"messages": 40}, every_n_turns=0)
    resized = play(session)
    calls = len(model.prompts)
    # past the limit (turn 20 on), a prune to 0.8 x 40 = 32 messages leaves room for 4 turns
    assert resized and resized[0] == 20
    assert calls <= (TURNS - 20) // 4 + 1, (calls, resized)
    assert all(b - a >= 4 for a, b in pairwise(resized)), resized
    assert len(session.current_chat_history) <= 40


def test_the_count_limit_prunes_to_its_low_water_mark_and_never_over_the_limit() -> None:
    session = Session(memo_update_handler=lambda memo, messages, attachments, settings: {"n": len(messages)}).use_memo(messages=50)
    session.configure(every_n_turns=0)
    session.set_settings("session.resize.prune_to_ratio", 0.6)
    for i in range(80):
        session.append_message(HumanMessage(content=f"q{i}", id=f"h{i}"))
        session.append_message(AIMessage(content=f"a{i}", id=f"a{i}"))
        assert len(session.current_chat_history) <= 52  # over the limit by at most the turn just appended
        if session.judge_resize():
            session.resize()
            assert len(session.current_chat_history) <= 30  # 0.6 x 50
    assert session.window_totals.count == len(session.current_chat_history)


def test_lite_mode_keeps_the_count_limit_exact_by_default() -> None:
    # lite mode's prune_to_ratio defaults to 1.0 (no model call to spare): the window keeps the limit's count
    session = Session().use_lite(messages=10)
    session.configure(every_n_turns=0)
    play(session, 12)
    assert len(session.current_chat_history) == 10


@pytest.mark.parametrize("limit", [{"messages": 40}, {"chars": 2400}, {"tokens": 600}, {"tokens": 900, "messages": 40}],
                         ids=["messages", "chars", "tokens", "tokens+messages"])
def test_every_limit_kind_resizes_turns_apart_in_memo_mode(limit: dict[str, int]) -> None:
    model = memo_model()
    session = Session(model=model).configure(mode="memo", limit=limit, every_n_turns=0)  # type: ignore[arg-type]
    resized = play(session)
    assert len(resized) >= 3, resized  # the limit was reached, more than once
    assert all(b - a >= 2 for a, b in pairwise(resized)), resized
    assert len(model.prompts) <= len(resized)
