"""Hysteresis: the limits trigger a resize, the low-water mark is what it leaves.

A prune under a token budget cuts to ``session.tokens.prune_to_ratio`` of the budget (0.9 by
default; 0.8 where a test needs room for turns this large), so the turns after it fit without another resize; the window never goes over the
budget, and the cut never separates a tool call from its results. Lite and memo (deep) modes.
"""

from __future__ import annotations

from itertools import pairwise
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
import pytest

from session_graph import Session
from session_graph.accounting.budget import KEEP_AT_LEAST, plan_prune

BUDGET = 3000


def tool_turn(i: int) -> list[BaseMessage]:
    """A realistic agent turn: a question, a tool call, its result, the answer (sizes vary)."""
    return [
        HumanMessage(content=f"question {i}: " + "what about the export " * (3 + i % 5), id=f"h{i}"),
        AIMessage(content="", tool_calls=[{"id": f"c{i}", "name": "lookup", "args": {"topic": str(i)}}], id=f"a{i}"),
        ToolMessage(content=f"result {i} " * (40 + (i * 37) % 90), tool_call_id=f"c{i}", id=f"t{i}"),
        AIMessage(content=f"answer {i} " * (20 + i % 13), id=f"r{i}"),
    ]


def session_for(mode: str, ratio: float | None) -> Session:
    if mode == "memo":
        session = Session(memo_update_handler=lambda memo, messages, attachments, settings: {"n": len(messages)}).use_memo()
    else:
        session = Session()
    session.set_settings("session.limit.tokens", BUDGET)
    session.set_settings("session.resize.every_n_turns", 0)
    if ratio is not None:
        session.set_settings("session.tokens.prune_to_ratio", ratio)
    return session


def check_window(window: list[BaseMessage]) -> None:
    """The window opens on a turn and every tool result follows its call."""
    assert window and not isinstance(window[0], ToolMessage)
    open_calls: set[str] = set()
    for message in window:
        if isinstance(message, AIMessage) and message.tool_calls:
            open_calls = {c["id"] for c in message.tool_calls}
        elif isinstance(message, ToolMessage):
            assert message.tool_call_id in open_calls, f"{message.id} lost its call"


def run(mode: str, ratio: float | None, turns: int = 60) -> tuple[Session, list[int]]:
    """Play ``turns`` turns, a judge and (when asked) a resize after each; the turns that resized."""
    session = session_for(mode, ratio)
    resized: list[int] = []
    for i in range(turns):
        for message in tool_turn(i):
            session.append_message(message)
        if session.judge_resize():
            session.resize()
            resized.append(i)
            check_window(session.current_chat_history)
        view = session.view()
        assert view.tokens <= BUDGET
        check_window([m for m in view.messages if not (m.id or "").endswith((":memo", ":summary"))])
    return session, resized


def test_the_default_mark_is_nine_tenths_of_the_budget() -> None:
    session, resized = run("lite", None, turns=20)
    assert resized and session.trace[-1].low_water == int(BUDGET * 0.9) == session.view().low_water


@pytest.mark.parametrize("mode", ["lite", "memo"])
def test_a_prune_leaves_room_for_several_turns(mode: str) -> None:
    session, resized = run(mode, 0.8)
    gaps = [b - a for a, b in pairwise(resized)]
    assert len(resized) >= 5 and min(gaps) >= 2  # never a resize on two turns in a row
    assert len(resized) <= 60 // 2
    after = session.trace[-1]
    assert after.low_water == int(BUDGET * 0.8) and after.tokens_after < after.tokens_before
    assert session.view().tokens <= BUDGET and session.view().low_water == int(BUDGET * 0.8)
    assert "low-water mark 2,400 tokens" in after.describe()


@pytest.mark.parametrize("mode", ["lite", "memo"])
def test_the_low_water_mark_sets_how_often_a_resize_runs(mode: str) -> None:
    counts = {ratio: len(run(mode, ratio)[1]) for ratio in (0.5, 0.8, 1.0)}
    assert counts[0.5] < counts[0.8] < counts[1.0]


def test_after_a_prune_the_view_is_under_the_low_water_mark_when_a_turn_boundary_allows() -> None:
    session = session_for("lite", 0.7)
    for i in range(40):
        for message in tool_turn(i):
            session.append_message(message)
        if session.judge_resize():
            session.resize()
            view = session.view()
            assert KEEP_AT_LEAST * view.low_water <= view.tokens <= view.low_water  # cut to the mark, on a turn
            assert isinstance(view.messages[0], HumanMessage)


def test_a_cut_inside_a_long_turn_keeps_that_turn_instead_of_almost_nothing() -> None:
    # the newest small turn alone is under half the low-water mark: opening on it would keep
    # almost nothing, so the prune keeps what fits the full budget from a turn boundary
    roles = ["user", "assistant", "tool", "assistant", "user", "assistant"]
    tokens: list[Any] = [10, 20, 700, 100, 10, 40]
    plan = plan_prune(roles, tokens, chars=0, messages=0, tokens=tokens, max_tokens=800, full_tokens=1000)
    assert plan.keep_from == 0
    # a short turn dropped at the mark is only the rounding to a turn: the low-water cut stands
    roles = ["user", "assistant"] * 6
    tokens = [10, 140] * 6
    plan = plan_prune(roles, tokens, chars=0, messages=0, tokens=tokens, max_tokens=800, full_tokens=1000)
    assert sum(tokens[plan.keep_from:]) <= 800 and plan.keep_from == 2 * (6 - 800 // 150)


def test_a_resize_with_nothing_to_do_never_enters_the_graph(monkeypatch: pytest.MonkeyPatch) -> None:
    from langgraph.graph.state import CompiledStateGraph

    from session_graph.resize import run as run_module

    runs: list[int] = []
    real = CompiledStateGraph.stream
    monkeypatch.setattr(CompiledStateGraph, "stream", lambda self, *a, **k: runs.append(1) or real(self, *a, **k))
    direct = run_module.execute  # a plain unobserved run goes through the graph without Pregel (resize/direct.py)
    monkeypatch.setattr(run_module, "execute", lambda *a, **k: runs.append(1) or direct(*a, **k))
    session = session_for("lite", None)
    for message in tool_turn(0):
        session.append_message(message)
    window = list(session.current_chat_history)
    assert session.judge_resize() is None and session.resize() == window and runs == [] and len(session.trace) == 0
    session.resize("lite")  # forced: the graph decides (and records the run)
    assert runs == [1] and session.trace[-1].forced
    session.set_policy_handler(lambda full, current, settings: None)
    session.resize()  # a user's policy is asked inside the graph, as its judge node
    assert runs == [1, 1]
