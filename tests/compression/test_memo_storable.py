"""A memo fold whose result no store can keep exactly (a model's JSON with NaN or Infinity, which
``json`` reads; a handler's datetime) fails as a bad reply: the memo keeps what it held and the
session still saves. Taken, it would make every later save refuse the memo (``_base.exact_json``)."""

from __future__ import annotations

import datetime
from pathlib import Path
from typing import Any

from conftest import Api, chat, fake_model
import pytest

from session_graph import MemoUpdateError, Session, SessionManager
from session_graph.stores import JsonlStore


@pytest.mark.parametrize("reply", ['{"memo": {"score": NaN}}', '{"memo": {"x": [1, -Infinity]}}'])
def test_a_model_memo_with_nan_or_infinity_is_a_bad_reply_never_the_memo(api: Api, tmp_path: Path, reply: str) -> None:
    manager = SessionManager(JsonlStore(tmp_path))
    session = chat(Session(model=fake_model(reply), id="k").use_memo(messages=2), 3)
    session.memo["old"] = "kept"
    with pytest.raises(MemoUpdateError, match="store"):
        api.resize(session, "lite")
    assert session.memo_for_model == {"old": "kept"} and session.memo_cursor == 0
    manager.save(session)  # still saves
    loaded = SessionManager(JsonlStore(tmp_path)).get("k")
    assert loaded is not None and loaded.memo_for_model == {"old": "kept"}


def test_a_handler_memo_with_a_datetime_is_refused_naming_the_key(api: Api) -> None:
    def handler(memo: Any, messages: Any, attachments: Any, settings: Any) -> dict[str, Any]:
        return {"when": datetime.date(2026, 1, 1)}

    session = chat(Session(memo_update_handler=handler).use_memo(messages=2), 3)
    with pytest.raises(MemoUpdateError, match=r"\['when'\] is a date.*isoformat"):
        api.resize(session, "lite")
    assert session.memo_for_model == {} and session.memo_cursor == 0
