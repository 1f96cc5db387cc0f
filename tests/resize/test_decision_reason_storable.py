"""A policy handler's decision ``reason`` goes into the memo (``memo["last_resize"]``), which every
store must give back exactly (``_base/exact_json``): a reason a store would not (a tuple, a
datetime, a NaN) made every save of the session refused, the error blaming the memo, until the
next resize replaced it. The judge now refuses such a decision, naming the policy handler."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from session_graph import Session
from session_graph.errors import HandlerResultError, PolicyResultError
from session_graph.stores import SessionManager


@pytest.mark.parametrize("reason", [("too", "many"), datetime(2026, 1, 1, tzinfo=UTC), float("nan")])
def test_a_decision_reason_no_store_gives_back_is_refused_by_the_judge(tmp_path: Path, reason: Any) -> None:
    def policy(full: Any, current: Any, settings: Any) -> Any:
        return {"type": "lite", "reason": reason} if len(current) > 4 else None

    with SessionManager(tmp_path, session_factory=lambda key: Session(key, policy_handler=policy)) as manager:
        session = manager.get_or_create("k")
        for turn in range(2):
            session.append_message({"role": "user", "content": f"q{turn}"})
            session.append_message({"role": "assistant", "content": f"a{turn}"})
        session.append_message({"role": "user", "content": "q2"})
        with pytest.raises(PolicyResultError, match=r"policy handler.*reason"):
            session.resize()
        assert "last_resize" not in session.memo
        manager.save(session)  # the session saves on: nothing of the refused decision was kept
    with SessionManager(tmp_path) as manager:
        loaded = manager.get("k")
        assert loaded is not None and len(loaded.full_chat_history) == 5


def test_a_plain_reason_is_kept_in_the_memo(tmp_path: Path) -> None:
    session = Session(policy_handler=lambda full, current, settings: {"type": "lite", "reason": "mine"} if len(current) > 2 else None)
    for turn in range(2):
        session.append_message({"role": "user", "content": f"q{turn}"})
        session.append_message({"role": "assistant", "content": f"a{turn}"})
    session.resize()
    assert session.memo["last_resize"]["reason"] == "mine"


def test_a_resize_handlers_memo_no_store_gives_back_is_refused_at_the_resize(tmp_path: Path) -> None:
    """A resize handler's memo holding a datetime: the resize was committed and every save then
    refused (the memo blamed, not the handler); now the resize fails naming the handler, and the
    session, unchanged, saves on."""
    def handler(full: Any, current: Any, memo: Any, settings: Any) -> Any:
        return full, current[-2:], {**memo, "when": datetime(2026, 1, 1, tzinfo=UTC)}

    with SessionManager(tmp_path, session_factory=lambda key: Session(key, resize_handlers={"lite": handler})) as manager:
        session = manager.get_or_create("k")
        for turn in range(3):
            session.append_message({"role": "user", "content": f"q{turn}"})
            session.append_message({"role": "assistant", "content": f"a{turn}"})
        with pytest.raises(HandlerResultError, match=r"'lite' resize handler.*datetime"):
            session.resize(force="lite")
        assert "when" not in session.memo and len(session.current_chat_history) == 6
        manager.save(session)
