"""Fold records of the wrong shape (a hand-edited or damaged document) never make a later resize
fail: a document import refuses them, naming the entry; a store drops them with a warning
(bookkeeping only: a back-off or a refused compression starts over), the session loads."""

from __future__ import annotations

import logging
from typing import Any

from conftest import chat
import pytest
from stores_util import fresh_tenant

from session_graph import DocumentError, Session
from session_graph.stores import SessionManager, SessionStore

BAD = [
    {"compression_refused": "lots"},
    {"compression_refused": -3},
    {"fold_failure": "yes"},
    {"fold_failure": {"cursor": 0, "count": "x", "turn": 1, "retry": 2}},
]


def memo_session(key: str = "k") -> Session:
    def update(memo: dict[str, Any], messages: list[Any], attachments: Any, settings: Any) -> dict[str, Any]:
        return {**memo, "n": int(memo.get("n", 0)) + len(messages)}

    return Session(key, memo_update_handler=update).use_memo(messages=4)


@pytest.mark.parametrize("records", BAD)
def test_a_document_with_records_of_the_wrong_shape_is_refused_naming_them(records: dict[str, Any]) -> None:
    document = chat(memo_session(), 3).to_dict()
    with pytest.raises(DocumentError, match=f"'fold_records'.*'{next(iter(records))}'"):
        Session().load_dict({**document, "fold_records": records})
    older = {**document, "memo": {**document["memo"], **records}}  # as written before: in the memo
    with pytest.raises(DocumentError, match=f"'{next(iter(records))}'"):
        Session().load_dict(older)


@pytest.mark.parametrize("records", BAD)
def test_a_stored_session_with_records_of_the_wrong_shape_loads_and_resizes(
    store: SessionStore, records: dict[str, Any], caplog: pytest.LogCaptureFixture
) -> None:
    tenant = fresh_tenant()
    session = chat(memo_session(), 3)
    session._state.fold_records = dict(records)  # as a damaged or hand-edited store holds it
    SessionManager(store, tenant=tenant, session_factory=memo_session).save(session)
    with caplog.at_level(logging.WARNING):
        loaded = SessionManager(store, tenant=tenant, session_factory=memo_session).get_or_create("k")
    assert loaded._state.fold_records == {}
    assert any("fold records dropped" in record.getMessage() for record in caplog.records)
    chat(loaded, 6, start=3)
    loaded.resize(True)  # no ValueError: the memo folds
    assert loaded.memo["n"] > 0 and len(loaded.full_chat_history) == 18
