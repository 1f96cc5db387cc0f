"""An agent's view after a prune: the model is called after the user's message and after each
tool result, a prune runs after the answer, so messages arrive between the prune and the next
view. The last view is carried over (rebased, then extended), never rebuilt whole, and it is
exactly the view built anew."""

from __future__ import annotations

import random

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
import pytest

from session_graph import Session
from session_graph.resize import view_builder
from session_graph.resize.view import build_view

WORDS = ["alpha", "beta", "gamma", "delta", "epsilon", "window", "budget"]


def _turn(rng: random.Random, n: int) -> list[BaseMessage]:
    def text(k: int) -> str:
        return " ".join(rng.choice(WORDS) for _ in range(rng.randint(k // 2, k)))

    calls = rng.randint(0, 2)
    messages: list[BaseMessage] = [HumanMessage(f"q{n} {text(40)}", id=f"u{n}")]
    if calls:
        ids = [f"c{n}-{k}" for k in range(calls)]
        messages.append(AIMessage("", tool_calls=[{"id": i, "name": "look", "args": {"q": i}} for i in ids], id=f"t{n}"))
        messages += [ToolMessage(f"r {text(120)}", tool_call_id=i, name="look", id=f"r{i}") for i in ids]
    messages.append(AIMessage(f"a{n} {text(100)}", id=f"a{n}"))
    return messages


@pytest.mark.parametrize("seed", range(4))
def test_views_between_prunes_and_turns_are_carried_and_equal_a_full_build(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    rng = random.Random(seed)
    session = Session().configure(limit={"tokens": rng.choice([900, 2000])}, every_n_turns=0)
    if seed % 2 == 0:
        session.append_message(SystemMessage("be brief", id="sys"))
    builds: list[int] = []
    real = view_builder.build_with_tail
    monkeypatch.setattr(view_builder, "build_with_tail", lambda *args: builds.append(1) or real(*args))
    outside = rng.choice([0, 50])
    for n in range(120):
        for message in _turn(rng, n):
            session.append_message(message)
            if isinstance(message, HumanMessage | ToolMessage):  # the model is called here
                view = session.view(outside_tokens=outside)
                full = build_view(session.state, session._ledger, session.settings.resolved(), outside)
                assert [m.id for m in view.messages] == [m.id for m in full.messages]
                assert (view.tokens, view.truncated, view.elided) == (full.tokens, full.truncated, full.elided)
        if session.judge_resize():
            session.resize()
    assert len(session.trace) > 10  # the window was pruned again and again
    assert len(builds) <= 2  # carried across every prune (the first view, and at most one more, built whole)
