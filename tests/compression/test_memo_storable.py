"""A memo fold whose result no store can keep exactly (a model's JSON with NaN or Infinity, which
``json`` reads; a handler's datetime) fails as a bad reply: the memo keeps what it held and the
session still saves. Taken, it would make every later save refuse the memo (``_base.exact_json``)."""

from __future__ import annotations

import datetime
import json
from pathlib import Path
from typing import Any

from conftest import Api, chat, fake_model
import pytest

from session_graph import MemoUpdateError, Session, SessionManager
from session_graph._base.exact_json import unstorable
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


def test_a_memo_compression_with_nan_is_refused_and_the_memo_shortened_without_the_model(api: Api) -> None:
    big = {"facts": [f"fact number {i} about the export" for i in range(80)], "user": "Ann"}
    small = '{"memo": {"facts": ["the export is fixed"], "user": "Ann", "score": NaN}}'  # kept were it not for the NaN
    model = fake_model(json.dumps({"memo": big}), small)
    session = chat(Session(model=model).use_memo(messages=2), 3)
    session.set_settings("session.limit.tokens", 600)
    session.set_settings("session.summary.reserve_tokens", 60)
    api.resize(session, "lite")
    assert len(model.prompts) == 2  # the fold, then its one compression request
    stored = session.memo_for_model
    assert "score" not in stored and stored["user"] == "Ann" and stored["facts"][-1] == "fact number 79 about the export"
    assert unstorable(session.memo, "session.memo") is None
