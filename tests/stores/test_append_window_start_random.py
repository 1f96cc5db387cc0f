"""An appended prune's window start, found in one look-up when the kept window is the history's
messages there in order (``session_append._contiguous``), is the least position looking each kept
message up gives, over seeded random sessions: tool calls and their results, a system message
first, lite prunes saved or not, reloads (a lazily loaded history), another writer's messages
merged, metadata edits, async and sync saves, a history past the ledger's re-index threshold;
and every session reloads as it was held."""

from __future__ import annotations

import asyncio
from pathlib import Path
import random
from typing import Any

from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage
import pytest

from session_graph import SessionManager
from session_graph.stores import session_append


@pytest.mark.parametrize("seed", range(10))
def test_the_one_look_up_window_start_is_the_least_position_of_the_kept_messages(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, seed: int) -> None:
    real, taken, wrong = session_append._contiguous, [], []

    def checked(session: Any, ledger: Any, count: int) -> int | None:
        found = real(session, ledger, count)
        if found is not None:
            each = [ledger.held_position(m.id) for m in session.current_chat_history[:count]]  # no read of a lazy middle
            taken.append(found)
            if None in each or min(each) != found:
                wrong.append((found, each))
        return found

    monkeypatch.setattr(session_append, "_contiguous", checked)
    rnd = random.Random(seed)
    manager = SessionManager(tmp_path)
    session = manager.get_or_create("k").use_lite(messages=rnd.choice([3, 4, 6, 9]))
    if seed % 2:
        session.append_message(SystemMessage("system"))
    if seed % 5 == 0:  # past the ledger's re-index threshold (a merge extends its index)
        for j in range(1_100):
            session.append_message(HumanMessage(f"before {j}"))
        manager.save(session)
    for n in range(40):
        r = rnd.random()
        if r < 0.2:
            session.append_message(AIMessage("", tool_calls=[{"name": "t", "args": {}, "id": f"c{n}"}]))
            session.append_message(ToolMessage("result", tool_call_id=f"c{n}"))
        else:
            session.append_message(HumanMessage(f"q{n}") if r < 0.5 else AIMessage(f"a{n}"))
        if rnd.random() < 0.6:
            durable = rnd.random() < 0.5
            if rnd.random() < 0.3:
                asyncio.run(manager.asave(session, durable=durable))
            else:
                manager.save(session, durable=durable)
        if rnd.random() < 0.6 and session.judge_resize() is not None:
            session.resize()
            if rnd.random() < 0.8:
                manager.save(session)
        x = rnd.random()
        if x < 0.07:  # another process: a lazily loaded history
            manager.save(session)
            manager = SessionManager(tmp_path)
            session = manager.get("k")
            assert session is not None
        elif x < 0.12:  # another writer's message, merged by the next save
            manager.save(session)
            other = SessionManager(tmp_path)
            theirs = other.get("k")
            assert theirs is not None
            theirs.append_message(HumanMessage(f"other {n}"))
            other.save(theirs)
        elif x < 0.15:
            manager.save(session)
            session.metadata["n"] = n
    session.append_message(HumanMessage("last"))
    manager.save(session)
    assert taken and not wrong, (len(taken), wrong)
    again = SessionManager(tmp_path).get("k")
    assert again is not None
    assert [m.id for m in again.current_chat_history] == [m.id for m in session.current_chat_history]
    assert [m.id for m in again.full_chat_history] == [m.id for m in session.full_chat_history]
