"""A process forked while another thread holds a lazy history's lock or an agent binding's step
lock goes on in the child without waiting for a thread that does not exist there
(``os.register_at_fork`` through ``_base/forks.py``, as the JSONL store's locks do)."""

from __future__ import annotations

from collections.abc import Callable
import os
from pathlib import Path
import sys
import threading
from typing import Any

from fork_util import fork_while_held, ok
from langchain_core.messages import HumanMessage
import pytest
from recall_util import fold_away

from session_graph import Session, SessionManager
from session_graph.integrations import history_recall, step_locks
from session_graph.integrations.binding import SessionBinding
from session_graph.integrations.history_recall import HistoryRecall, recall_text
from session_graph.resize.history import LazyHistory
from session_graph.stores import JsonlStore

pytestmark = pytest.mark.skipif(not hasattr(os, "fork") or sys.platform == "win32", reason="POSIX fork")


def test_a_child_forked_while_a_lazy_history_is_read_reads_it() -> None:
    messages = [HumanMessage(content=f"m{i}", id=f"m{i}") for i in range(4)]
    history = LazyHistory(messages[0], 3, [messages[3]], lambda: messages[1:3])

    def child() -> None:
        assert [m.id for m in history] == ["m0", "m1", "m2", "m3"]

    assert ok(fork_while_held(history._lock.lock, child))
    assert not history.loaded and [m.id for m in history] == ["m0", "m1", "m2", "m3"]  # the parent's own lock works


CONFIG = {"configurable": {"thread_id": "t"}}
HELD: dict[str, Callable[[SessionBinding], Any]] = {
    "the key's step lock": lambda binding: binding._lock("t", "thread", threading.RLock),
    "the step locks' guard": lambda binding: step_locks._LOCKS_GUARD,  # the module global the fork renews (read at the fork)
    "the thread check's guard": lambda binding: binding._guard,
}


@pytest.mark.parametrize("held", sorted(HELD))
def test_a_child_forked_while_a_binding_lock_is_held_steps(tmp_path: Path, held: str) -> None:
    manager = SessionManager(JsonlStore(tmp_path))
    binding = SessionBinding(manager=manager)
    if held == "the thread check's guard":
        binding = SessionBinding(Session("fixed"))
    binding.step([HumanMessage(content="before the fork", id="h0")], CONFIG, save=True)

    def child() -> None:
        session = binding.step([HumanMessage(content="in the child", id="h1")], CONFIG, save=True)
        assert [m.id for m in session.full_chat_history] == ["h0", "h1"]

    assert ok(fork_while_held(HELD[held](binding), child))
    session = binding.step([HumanMessage(content="parent again", id="h2")], CONFIG, save=True)  # the parent's locks work
    stored = ["h0", "h2"] if binding.fixed is not None else ["h0", "h1", "h2"]  # a store merges the child's turn
    assert [m.id for m in session.full_chat_history] == stored


def test_a_child_forked_while_a_recall_is_remembered_recalls() -> None:
    """The automatic recall's memo of its last search (``history_recall``) has a guard of its own:
    a child forked while another thread holds it recalls without waiting for that thread."""
    memo = Session(memo_update_handler=lambda memo, messages, attachments, settings: {"topics": ["travel"]})
    opening = [{"role": "user", "content": "My passport number ends in 4417."}, {"role": "assistant", "content": "Noted."}]
    session = fold_away(memo.configure(mode="memo"), opening, "What does my passport number end in?", 8, talk="small talk {i} about the weather")

    def child() -> None:
        assert "4417" in recall_text(session, HistoryRecall())

    assert ok(fork_while_held(history_recall._RECALLED_GUARD, child))
    assert "4417" in recall_text(session, HistoryRecall())  # the parent's guard works
