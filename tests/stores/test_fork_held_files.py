"""A process forked while another thread holds a JSONL store's held-files guard (or a session's
mutex) writes in the child without waiting for a thread that does not exist there, and with files
of its own (``os.register_at_fork`` in ``stores/jsonl_handles.py``)."""

from __future__ import annotations

import os
from pathlib import Path
import sys

from fork_util import fork_while_held
import pytest

from session_graph import SessionManager
from session_graph.stores import JsonlStore

pytestmark = pytest.mark.skipif(not hasattr(os, "fork") or sys.platform == "win32", reason="POSIX fork")


def turn(manager: SessionManager, text: str) -> None:
    session = manager.get_or_create("k")
    session.append_message({"role": "user", "content": text})
    manager.save(session)


LOCKS = {
    "held-files guard": lambda store, manager: store._held._guard,
    "a session's mutex": lambda store, manager: next(iter(store._held._entries.values())).mutex,
    "meta cache guard": lambda store, manager: store._written._guard,
    "manager cache lock": lambda store, manager: manager.cache._lock,
    "search index lock": lambda store, manager: store.search_index._lock,
}


@pytest.mark.parametrize("lock", sorted(LOCKS))
def test_a_child_forked_while_a_store_lock_is_held_can_write(tmp_path: Path, lock: str) -> None:
    store = JsonlStore(tmp_path)
    manager = SessionManager(store)
    turn(manager, "before the fork")
    status = fork_while_held(LOCKS[lock](store, manager), lambda: turn(manager, "in the child"))
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0, f"child status {status}"
    texts = [m.content for m in SessionManager(JsonlStore(tmp_path)).get("k").full_chat_history]
    assert texts == ["before the fork", "in the child"]
    turn(manager, "parent again")  # the parent's held files still work (merged with the child's write)
    texts = [m.content for m in SessionManager(JsonlStore(tmp_path)).get("k").full_chat_history]
    assert texts == ["before the fork", "in the child", "parent again"]
