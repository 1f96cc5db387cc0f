"""Hysteresis with a token budget and a char limit together: when the char mark is the one that
binds, the prune cuts to it and the next resize is turns away, as with either limit alone (the
check for "the cut kept almost nothing" measured tokens only, so a cut at the char mark looked
like one and fell back to the full limits: a resize, and in memo mode a model call, every turn)."""

from __future__ import annotations

from itertools import pairwise

from langchain_core.messages import AIMessage, HumanMessage
import pytest

from session_graph import Session
from session_graph.accounting.budget import plan_prune


def resized_turns(limit: dict[str, int], memo: bool) -> list[int]:
    session = Session(memo_update_handler=lambda m, messages, attachments, settings: {"n": len(messages)})
    if memo:
        session.use_memo()
    session.configure(limit=limit, every_n_turns=0)
    session.set_settings("session.resize.prune_to_ratio", 0.8)
    turns = []
    for i in range(60):
        session.append_message(HumanMessage(content="question about things " * 5, id=f"h{i}"))
        session.append_message(AIMessage(content="an answer with words " * 8, id=f"a{i}"))
        if session.judge_resize():
            turns.append(i)
            session.resize()
            assert session._ledger.totals.chars < limit["chars"]
    return turns


@pytest.mark.parametrize("memo", [False, True])
def test_a_char_limit_under_a_token_budget_keeps_its_hysteresis(memo: bool) -> None:
    chars_only = resized_turns({"chars": 6000}, memo)
    both = resized_turns({"tokens": 4000, "chars": 6000}, memo)
    assert len(both) <= len(chars_only) + 1 and min(b - a for a, b in pairwise(both)) >= 2, both


def test_the_cut_is_judged_against_the_mark_that_bound_it() -> None:
    # twelve short turns; the char mark (800 of 1,000) binds long before the token mark does
    roles = ["user", "assistant"] * 12
    sizes, tokens = [40, 60] * 12, [10, 15] * 12
    plan = plan_prune(roles, sizes, chars=800, messages=0, tokens=tokens, max_tokens=3600, full_chars=1000, full_tokens=4000)
    assert sum(sizes[plan.keep_from:]) <= 800  # cut to the char mark, not refilled to the full char limit
    # the long-turn fallback still applies when every mark would keep almost nothing
    roles = ["user", "assistant", "tool", "assistant", "user", "assistant"]
    sizes = tokens = [10, 20, 700, 100, 10, 40]
    plan = plan_prune(roles, sizes, chars=800, messages=0, tokens=tokens, max_tokens=800, full_chars=1000, full_tokens=1000)
    assert plan.keep_from == 0
