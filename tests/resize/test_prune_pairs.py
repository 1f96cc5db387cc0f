"""A prune keeps a tool result with its call by ``tool_call_id``, wherever the result was stored.

Two runs on one thread can store a result after another run's turn (a late result). Seeded
random windows with late results: ``walk_prune`` still agrees with ``plan_prune`` and neither
keeps a result whose call it dropped; unit cases for parallel calls, a late result of a pruned
call, a late result whose call stays, and a result with no call anywhere.
"""

from __future__ import annotations

import random
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage

from session_graph import Session
from session_graph.accounting.budget import plan_chunks, plan_prune
from session_graph.accounting.pairs import keep_calls
from session_graph.resize.prune_walk import walk_prune


def _window(rng: random.Random) -> tuple[list[str], list[list[str]], list[str | None]]:
    """Roles, call ids and answered ids of a window where some results arrive a turn late."""
    roles: list[str] = []
    calls: list[list[str]] = []
    answers: list[str | None] = []
    late: list[str] = []
    serial = 0

    def add(role: str, made: list[str] | None = None, answered: str | None = None) -> None:
        roles.append(role)
        calls.append(made or [])
        answers.append(answered)

    for _ in range(rng.randint(1, 10)):
        add("user")
        for _ in range(rng.randint(0, 2)):
            made = [f"c{serial + k}" for k in range(rng.randint(1, 3))]
            serial += len(made)
            add("assistant", made)
            for call in made:
                if rng.random() < 0.25:
                    late.append(call)  # its run's tool answers after another run's turn
                else:
                    add("tool", answered=call)
        add("assistant")
        while late and rng.random() < 0.6:
            add("tool", answered=late.pop(0))
    if rng.random() < 0.1:
        add("tool", answered="nowhere")  # a result with no call anywhere
        add("assistant")
    return roles, calls, answers


def _orphans(keep_from: int, calls: list[list[str]], answers: list[str | None]) -> list[int]:
    dropped = {c for made in calls[:keep_from] for c in made}
    kept = {c for made in calls[keep_from:] for c in made}
    return [i for i in range(keep_from, len(answers)) if answers[i] in dropped and answers[i] not in kept]


def test_late_results_keep_their_calls_and_the_walk_agrees_with_plan_prune() -> None:
    rng = random.Random(27)
    answered = moved = 0
    for _ in range(3000):
        roles, calls, answers = _window(rng)
        n = len(roles)
        sizes = [rng.choice((1, 5, 20, 80, 400)) for _ in roles]
        tokens = [max(1, s // rng.choice((1, 3, 4))) for s in sizes] if rng.random() < 0.7 else None
        full_chars = rng.choice((0, 100, 300, 1000))
        full_tokens = rng.choice((0, 60, 200, 600)) if tokens is not None else 0
        full_messages = rng.choice((0, 0, 6, 20))
        ratio = rng.choice((0.5, 0.8, 0.9, 1.0))
        limits = {"chars": int(full_chars * ratio), "messages": round(full_messages * ratio), "max_tokens": int(full_tokens * ratio)}
        keep_turn = tokens is not None and rng.random() < 0.8
        common = {"keep_turn": keep_turn, "full_chars": full_chars, "full_tokens": full_tokens}
        by_role = plan_prune(roles, sizes, tokens=tokens, full_messages=full_messages, **common, **limits)
        expected = plan_prune(roles, sizes, tokens=tokens, full_messages=full_messages, calls=calls.__getitem__,
                              answer=answers.__getitem__, **common, **limits)
        assert _orphans(expected.keep_from, calls, answers) == []
        assert expected.kept_count == n - expected.keep_from and expected.kept_chars == sum(sizes[expected.keep_from:])
        moved += expected.keep_from < by_role.keep_from
        walked = walk_prune(n, roles.__getitem__, sizes.__getitem__, tokens.__getitem__ if tokens is not None else None,
                            sum(sizes), sum(tokens or ()), calls=calls.__getitem__, answer=answers.__getitem__,
                            **common, **limits)
        if walked is not None:
            answered += 1
            assert walked == expected, (roles, answers, sizes, tokens, limits, keep_turn)
    assert answered > 1000 and moved > 100  # the walk answers often and late results moved many cuts


def test_a_late_result_of_a_pruned_call_moves_the_cut_to_its_call() -> None:
    roles = ["user", "assistant", "user", "assistant", "tool", "user", "assistant"]
    calls = [[], ["x"], [], [], [], [], []]
    answers = [None, None, None, None, "x", None, None]
    assert keep_calls(2, len(roles), calls.__getitem__, answers.__getitem__) == 1
    plan = plan_prune(roles, [10] * 7, chars=0, messages=5, calls=calls.__getitem__, answer=answers.__getitem__)
    assert plan.keep_from == 1 and plan.kept_count == 6


def test_parallel_calls_one_answered_late_keep_the_call_with_both_results() -> None:
    roles = ["user", "assistant", "tool", "user", "assistant", "tool", "user", "assistant"]
    calls = [[], ["a", "b"], [], [], [], [], [], []]
    answers = [None, None, "a", None, None, "b", None, None]
    assert keep_calls(3, len(roles), calls.__getitem__, answers.__getitem__) == 1  # "a" comes back too
    assert keep_calls(6, len(roles), calls.__getitem__, answers.__getitem__) == 6  # "b" dropped with its call


def test_a_late_result_whose_call_stays_and_a_result_with_no_call_leave_the_cut() -> None:
    roles = ["user", "assistant", "tool", "user", "assistant", "user", "assistant", "tool", "tool", "assistant"]
    calls = [[], ["p"], [], [], ["x"], [], [], [], [], []]
    answers = [None, None, "p", None, None, None, None, "x", "nowhere", None]
    assert keep_calls(3, len(roles), calls.__getitem__, answers.__getitem__) == 3  # "x"'s call is kept
    assert keep_calls(5, len(roles), calls.__getitem__, answers.__getitem__) == 4  # "x"'s call comes back
    assert keep_calls(9, len(roles), calls.__getitem__, answers.__getitem__) == 9  # nothing open is kept


def test_an_ordinary_window_reads_only_the_dropped_prefix() -> None:
    roles = ["user", "assistant", "tool", "assistant"] * 500
    calls = [[f"c{i}"] if role == "assistant" and i % 4 == 1 else [] for i, role in enumerate(roles)]
    answers = [f"c{i - 1}" if role == "tool" else None for i, role in enumerate(roles)]
    read: list[int] = []

    def answer(i: int) -> str | None:
        read.append(i)
        return answers[i]

    plan = walk_prune(len(roles), roles.__getitem__, lambda i: 10, None, 20_000, 0, chars=19_000, messages=0, max_tokens=0,
                      keep_turn=False, full_chars=20_000, full_tokens=0, calls=calls.__getitem__, answer=answer)
    assert plan is not None and plan.keep_from == 104 and max(read) < 104  # the kept 1,896 were not read


def test_a_chunk_never_ends_between_a_call_and_its_late_result() -> None:
    roles = ["user", "assistant", "user", "assistant", "tool", "user", "assistant", "user", "assistant"]
    calls = [[], ["x"], [], [], [], [], [], [], []]
    answers = [None, None, None, None, "x", None, None, None, None]
    sizes = [10] * len(roles)
    assert plan_chunks(roles, sizes, 25) == [(0, 2), (2, 3), (3, 5), (5, 7), (7, 9)]  # by role: "x" parted
    chunks = plan_chunks(roles, sizes, 25, calls.__getitem__, answers.__getitem__)
    assert chunks == [(0, 5), (5, 7), (7, 9)]  # the call's chunk runs on to its result, then as before


def test_a_memo_session_with_late_results_keeps_every_result_with_its_call() -> None:
    folds: list[list[BaseMessage]] = []

    def update(memo: dict[str, Any], messages: list[BaseMessage], attachments: Any, settings: Any) -> dict[str, Any]:
        folds.append(list(messages))
        return {"n": memo.get("n", 0) + len(messages)}

    session = Session(memo_update_handler=update).use_memo(chars=3_000)
    session.set_settings("session.memo.chunk_tokens", 200)
    pending: list[str] = []
    for turn in range(80):
        session.append_message(HumanMessage(content=f"question {turn} " + "word " * (5 + turn % 30), id=f"q{turn}"))
        if turn % 3 == 0:
            session.append_message(AIMessage(content="", tool_calls=[{"id": f"c{turn}", "name": "look", "args": {}},
                                                                      {"id": f"d{turn}", "name": "look", "args": {}}],
                                             id=f"t{turn}"))
            session.append_message(ToolMessage(content="at once " * 20, tool_call_id=f"c{turn}", id=f"rc{turn}"))
            pending.append(f"d{turn}")  # its parallel sibling answers after the next run's turn
        session.append_message(AIMessage(content=f"answer {turn} " + "text " * (3 + turn % 20), id=f"a{turn}"))
        if pending and turn % 3 == 1:
            call = pending.pop(0)
            session.append_message(ToolMessage(content="late " * 20, tool_call_id=call, id=f"r{call}"))
        if session.judge_resize():
            session.resize()
        window = session.current_chat_history
        made = {c["id"] for m in window if isinstance(m, AIMessage) for c in m.tool_calls}
        assert [m.id for m in window if isinstance(m, ToolMessage) and m.tool_call_id not in made] == [], turn
        shown = session.view().messages
        assert {m.id for m in window if isinstance(m, ToolMessage)} <= {m.id for m in shown}  # none silently dropped
    folded = [m.id for batch in folds for m in batch]
    assert len(folds) >= 5 and len(folded) == len(set(folded))
    assert set(folded) | {m.id for m in session.current_chat_history} == {m.id for m in session.full_chat_history}
