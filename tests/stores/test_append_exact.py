"""The appended save (``stores/session_append``) refuses a memo no store keeps exactly as a full
save does: the check rides on ``jsonl_state.grown``'s own encoding of the memo (its orjson round
trip compared with the value), so it must still name the value and write nothing, on a turn that
only edited the memo in place and on a lite prune (which carries the memo in its state line)."""

from __future__ import annotations

import datetime
from pathlib import Path
from typing import Any

import pytest

from session_graph import SessionManager
from session_graph._base.files import encode_name
from session_graph.errors import StoreError
from session_graph.stores import JsonlStore

REFUSED: dict[str, tuple[Any, str]] = {
    "nan": (float("nan"), "NaN"),
    "tuple": ((1, 2), "tuple"),
    "int key": ({1: "a"}, "key 1"),
    "int past 64 bits": (2**64, "64 bits"),
    "datetime": (datetime.datetime(2026, 1, 2, 3, 4, 5), "isoformat"),
}


def _attempts(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Each store method a save called (written or not)."""
    seen: list[str] = []
    for name in ("append_messages", "update"):
        real = getattr(JsonlStore, name)

        def spy(self: JsonlStore, *args: Any, _real: Any = real, _name: str = name, **kwargs: Any) -> Any:
            seen.append(_name)
            return _real(self, *args, **kwargs)

        monkeypatch.setattr(JsonlStore, name, spy)
    return seen


def _turn(session: Any, i: int) -> None:
    session.append_message({"role": "user", "content": f"question {i}"})
    session.append_message({"role": "assistant", "content": f"answer {i}"})


@pytest.mark.parametrize("prune", [False, True], ids=["memo edit", "lite prune"])
@pytest.mark.parametrize("name", list(REFUSED))
def test_an_appended_save_refuses_a_memo_no_store_keeps_exactly(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                               name: str, prune: bool) -> None:
    value, fix = REFUSED[name]
    manager = SessionManager(tmp_path)
    session = manager.get_or_create("k").use_lite(messages=6)
    _turn(session, 0)
    manager.save(session)
    log = tmp_path / "default" / (encode_name("k") + ".jsonl")
    _turn(session, 1)
    _turn(session, 2)
    session.memo["v"] = {"inner": value}
    if prune:
        _turn(session, 3)
        assert session.judge_resize() is not None
        session.resize()
    before = log.read_bytes()
    attempts = _attempts(monkeypatch)
    with pytest.raises(StoreError) as caught:
        manager.save(session)
    assert attempts[0] == "append_messages"  # refused by the appended write itself (grown), before its write
    message = str(caught.value)
    assert "session.memo['v']['inner']" in message and fix in message, message
    assert log.read_bytes() == before  # nothing written
    del session.memo["v"]
    manager.save(session)  # the same turn saves once the value is gone
    loaded = SessionManager(tmp_path).get("k")
    assert loaded is not None and "v" not in loaded.memo
    assert [m.id for m in loaded.full_chat_history] == [m.id for m in session.full_chat_history]
