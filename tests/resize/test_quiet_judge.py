"""The default judge compares the running totals with bounds it works out once per change
(``Ledger.quiet``): whatever happens between two judges (appends, resizes that prune or fold,
settings, counters, a memo, a restore), it decides what the default policy decides on a ledger
rebuilt from scratch over the same state, sync and async."""

from __future__ import annotations

import asyncio
import random
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage

from session_graph import Session
from session_graph.resize.ledger import Ledger
from session_graph.resize.policy import Decision, default_policy

WORDS = ["alpha", "beta", "gamma", "delta", "window", "memo", "tokens", "budget"]


def _fold(memo: dict[str, Any], messages: list[BaseMessage], attachments: Any, settings: Any) -> dict[str, Any]:
    return {"ids": [*memo.get("ids", []), *(m.id for m in messages)]}


def _fresh_decision(session: Session) -> Decision | None:
    """The default policy on a ledger built afresh from the session's state (no running state)."""
    state = session.state
    limits = state.settings.resolved()
    fresh = Ledger(state)
    fresh.custom = session._ledger.custom
    fresh.sync(state, limits)
    return default_policy(fresh.totals, state.turns, state.last_resize_turn, limits, fresh.fixed_tokens(state, limits))


def _turn(rng: random.Random, n: int) -> list[BaseMessage]:
    text = " ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 40)))
    messages: list[BaseMessage] = [HumanMessage(f"q{n} {text}", id=f"u{n}")]
    if rng.random() < 0.3:
        messages.append(AIMessage("", tool_calls=[{"id": f"c{n}", "name": "look", "args": {"q": text[:20]}}], id=f"t{n}"))
        messages.append(ToolMessage(f"r{n} {text[::-1]}", tool_call_id=f"c{n}", name="look", id=f"r{n}"))
    if rng.random() < 0.05:
        messages.append(SystemMessage(f"note {n}", id=f"s{n}"))
    messages.append(AIMessage(f"a{n} {text}", id=f"a{n}"))
    return messages


def _change(rng: random.Random, session: Session) -> None:
    """One of the changes that move what the judge compares against."""
    pick = rng.randrange(6)
    if pick == 0:
        session.set_settings("session.limit", {"tokens": rng.choice([300, 600, 1200])})
    elif pick == 1:
        session.set_settings("session.limit", {"chars": rng.choice([400, 900]), "messages": rng.choice([None, 8, 20])})
    elif pick == 2:
        session.set_settings("session.resize.every_n_turns", rng.choice([0, 2, 5]))
    elif pick == 3:
        session.set_token_counter(rng.choice([None, lambda text: len(text.split()) + 1]))
    elif pick == 4:
        session.set_settings("session.summary.reserve_tokens", rng.choice([50, 200]))
    else:
        session.restore(session.state)  # a reload of the same state: everything derived is rebuilt


def _run(seed: int, mode: str) -> int:
    rng = random.Random(seed)
    session = Session(memo_update_handler=_fold) if mode == "memo" else Session()
    session.configure(mode=mode, limit={"tokens": 600}, every_n_turns=0)  # type: ignore[arg-type]
    session.append_message(SystemMessage("You are helpful.", id="sys"))
    decided = 0
    for n in range(60):
        for message in _turn(rng, n):
            session.append_message(message)
            expected = _fresh_decision(session)
            assert session.judge_resize() == expected, (seed, n, message.id)
            assert asyncio.run(session.async_judge_resize()) == expected
            decided += expected is not None
        if session.judge_resize():
            session.resize()
            assert session.judge_resize() == _fresh_decision(session)
        if rng.random() < 0.2:
            _change(rng, session)
            assert session.judge_resize() == _fresh_decision(session)
    return decided


def test_the_running_judge_decides_as_a_ledger_built_afresh_in_lite_mode() -> None:
    assert sum(_run(seed, "lite") for seed in range(6)) > 20  # the limits were reached, not only quiet turns


def test_the_running_judge_decides_as_a_ledger_built_afresh_in_memo_mode() -> None:
    assert sum(_run(seed, "memo") for seed in range(6, 10)) > 10


def test_a_memo_replaced_by_hand_is_seen_by_the_next_judge() -> None:
    session = Session(memo_update_handler=_fold).configure(mode="memo", limit={"tokens": 400}, every_n_turns=0)
    session.append_message(SystemMessage("You are helpful.", id="sys"))
    rng, n = random.Random(3), 0
    while session.window_totals.tokens < 250:  # a window under its room (397 tokens) while the memo is empty
        for message in _turn(rng, n):
            session.append_message(message)
        n += 1
    assert session.judge_resize() is None
    session.state.memo = {"ids": ["word " * 300]}  # what the memo holds takes room from the window
    assert session.judge_resize() == _fresh_decision(session) == {"type": "deep", "reason": "max_tokens", "severity": 100}


def test_a_memo_replaced_twice_after_a_forced_judge_is_seen_by_the_next_judge() -> None:
    # a forced judge works out the memo's tokens without the default judge's bounds holding the
    # memo; the second new dict may take the first one's freed address (CPython reuses it), so a
    # memo known by id() and size alone looked unchanged and its old tokens were kept
    session = Session(memo_update_handler=_fold).configure(mode="memo", limit={"tokens": 400}, every_n_turns=0)
    session.append_message(SystemMessage("You are helpful.", id="sys"))
    for n in range(4):
        session.append_message(HumanMessage(f"q{n} " + "word " * 20, id=f"u{n}"))
        session.append_message(AIMessage(f"a{n} " + "word " * 20, id=f"a{n}"))
    assert session.judge_resize() is None
    session.state.memo = {"ids": ["x"]}
    assert session.judge_resize(force="lite") == {"type": "lite", "reason": "force", "severity": 1000}
    session.state.memo = {"ids": ["word " * 300]}
    session.state.memo = {"ids": ["more " * 300]}
    assert session.judge_resize() == _fresh_decision(session) == {"type": "deep", "reason": "max_tokens", "severity": 100}
