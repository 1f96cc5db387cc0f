"""The view under a token budget keeps a tool call with its results by ``tool_call_id``,
wherever the results were stored.

A result stored late (after another run's turn) is shown right after its call, so its tokens
belong where its call is; counted by position (with the message it was stored after), the view's
reach ended early and the view kept less than fits (``_reach``). Seeded random sessions with late
results: every view, built whole or extended after appends, is what the reverse fill over the whole
answered window keeps, and is well formed (each result right after its call, each call answered).
"""

from __future__ import annotations

import random

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
import pytest

from session_graph import Session
from session_graph.resize import view as view_module


def _call(ident: str, *calls: str) -> AIMessage:
    return AIMessage(content="", id=ident, tool_calls=[{"id": c, "name": "f", "args": {}} for c in calls])


def _session(budget: int, messages: list[BaseMessage], *, view_each: bool = False) -> Session:
    session = Session().configure(limit={"tokens": budget})
    for message in messages:
        session.append_message(message)
        if view_each:
            session.view()
    return session


def _random_turns(rng: random.Random) -> list[BaseMessage]:
    """Turns whose tool results sometimes arrive after the next turn's messages (late)."""
    messages: list[BaseMessage] = []
    late: list[str] = []
    serial = 0
    for turn in range(rng.randint(1, 8)):
        messages.append(HumanMessage(content=f"u{turn} " + "w " * rng.choice((1, 5, 30)), id=f"u{turn}"))
        for _ in range(rng.randint(0, 2)):
            made = [f"c{serial + k}" for k in range(rng.randint(1, 2))]
            serial += len(made)
            messages.append(_call(f"a{made[0]}", *made))
            for call in made:
                if rng.random() < 0.3:
                    late.append(call)
                else:
                    messages.append(ToolMessage(content="r " * rng.choice((1, 10, 60)), tool_call_id=call, id=f"t{call}"))
        messages.append(AIMessage(content="ok " * rng.choice((1, 10)), id=f"e{turn}"))
        while late and rng.random() < 0.7:
            call = late.pop(0)
            messages.append(ToolMessage(content="late " * rng.choice((1, 10, 60)), tool_call_id=call, id=f"t{call}"))
    return messages


def _reference(session: Session, monkeypatch: pytest.MonkeyPatch) -> list[str | None]:
    """The view the reverse fill plans over the whole answered window (no reach cut)."""
    with monkeypatch.context() as patch:
        patch.setattr(view_module, "_reach", lambda window, measure, room: 0)
        view = view_module.build_view(session._state, session._ledger, session._state.settings.resolved())
    return [m.id for m in view.messages]


def _well_formed(messages: list[BaseMessage]) -> None:
    open_calls: set[str] | None = None
    for message in messages:
        if isinstance(message, ToolMessage):
            assert open_calls is not None and message.tool_call_id in open_calls, f"{message.id}: result apart from its call"
            open_calls.discard(message.tool_call_id)
            continue
        assert not open_calls, f"unanswered calls {open_calls}"
        open_calls = {c["id"] or "" for c in message.tool_calls} if isinstance(message, AIMessage) and message.tool_calls else None
    assert not open_calls


def test_a_late_result_counts_where_its_call_is_so_the_view_keeps_what_fits() -> None:
    messages: list[BaseMessage] = [
        HumanMessage(content="u0 " + "w " * 5, id="u0"), AIMessage(content="ok " * 10, id="e0"),
        HumanMessage(content="u1 " + "w " * 30, id="u1"), AIMessage(content="ok " * 10, id="e1"),
        HumanMessage(content="u2 " + "w " * 30, id="u2"), _call("ac0", "c0", "c1"),
        ToolMessage(content="r ", tool_call_id="c0", id="tc0"), AIMessage(content="ok ", id="e2"),
        HumanMessage(content="u3 w ", id="u3"), _call("ac2", "c2"), AIMessage(content="ok ", id="e3"),
        ToolMessage(content="late " * 60, tool_call_id="c1", id="tc1"),  # ac0's, after u3's turn: its call stays out
        ToolMessage(content="late ", tool_call_id="c2", id="tc2"),  # ac2's, after its run's reply
        HumanMessage(content="u4 " + "w " * 30, id="u4"), _call("ac3", "c3", "c4"),
        ToolMessage(content="r " * 60, tool_call_id="c4", id="tc4"),
    ]
    view = _session(250, messages).view()
    # tc1 (67 tokens) no longer ends the reach at u4: u3's turn fits, tc2 shown after its call
    assert [m.id for m in view.messages] == ["u3", "ac2", "tc2", "e3", "u4", "ac3", "tc4", "ac3:cancelled:c3"]
    assert view.tokens <= 250


@pytest.mark.parametrize("view_each", [False, True], ids=["built-whole", "extended-after-appends"])
def test_views_with_late_results_match_the_fill_over_the_whole_window(monkeypatch: pytest.MonkeyPatch, view_each: bool) -> None:
    rng = random.Random(28)
    late_cases = 0
    for _ in range(150):
        messages = _random_turns(rng)
        budget = rng.choice((40, 60, 120, 250, 500))
        session = _session(budget, messages, view_each=view_each)
        view = session.view()
        _well_formed(view.messages)
        assert view.tokens <= budget
        assert [m.id for m in view.messages] == _reference(session, monkeypatch)
        late_cases += any(isinstance(m, ToolMessage) and m.id and m.id.startswith("tc") for m in messages[-3:])
    assert late_cases > 10  # the seed makes late results near the end, where the reach reads them
