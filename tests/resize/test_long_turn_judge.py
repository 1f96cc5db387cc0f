"""A limit fires only when a prune could shrink the window: under a token budget a prune keeps
the current turn whole, so a long agent turn (tool calls with big results) over the char or
message limit must not run a resize on every step that cuts nothing."""

from __future__ import annotations

from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
import pytest

from session_graph import Session


def long_turn(session: Session, steps: int) -> list[tuple[int, int]]:
    """Three short turns, then one turn of ``steps`` tool calls; (step, messages the resize
    cut) of each step whose judge fired."""
    for i in range(3):
        session.append_message(HumanMessage(content="q " * 50, id=f"h{i}"))
        session.append_message(AIMessage(content="a " * 50, id=f"r{i}"))
    session.append_message(HumanMessage(content="a long task", id="task"))
    fired = []
    for step in range(steps):
        session.append_message(AIMessage(content="", tool_calls=[{"id": f"c{step}", "name": "t", "args": {}}], id=f"a{step}"))
        session.append_message(ToolMessage(content="r" * 1500, tool_call_id=f"c{step}", id=f"t{step}"))
        if session.judge_resize():
            before = len(session.current_chat_history)
            session.resize()
            fired.append((step, before - len(session.current_chat_history)))
    return fired


@pytest.mark.parametrize("limit", [{"chars": 6000}, {"messages": 6}])
@pytest.mark.parametrize("memo", [False, True])
def test_a_turn_a_prune_must_keep_fires_once_not_on_every_step(limit: dict[str, int], memo: bool) -> None:
    session = Session(memo_update_handler=lambda m, messages, attachments, settings: {"n": len(messages)})
    if memo:
        session.use_memo()
    session.configure(limit={"tokens": 4000, **limit}, every_n_turns=0)
    fired = long_turn(session, 8)
    # the old turns go (once or twice), then the window is the current turn, which every prune
    # keeps: no more resizes that cut nothing (before: one on every later step)
    assert 1 <= len(fired) <= 2 and all(cut > 0 for _, cut in fired), fired
    assert session.current_chat_history[0].id == "task" and fired[-1][0] < 7
    assert session.view().tokens <= 4000
    assert len(session.trace) == len(fired)


def test_without_a_token_budget_a_long_turn_is_still_cut() -> None:
    # no token budget: a prune may cut inside a turn, so the char limit keeps firing as it grows
    session = Session().configure(limit={"chars": 6000}, every_n_turns=0)
    fired = long_turn(session, 8)
    assert len(fired) >= 3 and all(cut > 0 for _, cut in fired)
    assert sum(len(str(m.content)) for m in session.current_chat_history) < 6000
