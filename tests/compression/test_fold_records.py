"""The fold machinery's bookkeeping (a back-off, a refused compression) lives in the session
state's ``fold_records``, never in the memo: saved, exported, merged under contention like the
cursor, and read from the memo of documents written before."""

from __future__ import annotations

from typing import Any

from conftest import BrokenModel, chat
import pytest
from stores_util import fresh_tenant

from session_graph import DocumentError, MemoUpdateError, Session
from session_graph.stores import SessionManager, SessionStore

FAILURE = {"cursor": 0, "count": 1, "turn": 2, "retry": 2}


def failing(model: BrokenModel) -> Session:
    session = chat(Session("k", model=model).use_memo(messages=2), 2)
    with pytest.raises(MemoUpdateError):
        session.resize("lite")
    return session


def test_a_failure_is_recorded_beside_the_memo_not_in_it(broken_model: BrokenModel) -> None:
    session = failing(broken_model)
    assert session._state.fold_records == {"fold_failure": FAILURE}
    assert "fold_failure" not in session.memo and session.memo_for_model == {}


def test_the_records_round_trip_through_an_export_and_older_documents_are_read(broken_model: BrokenModel) -> None:
    session = failing(broken_model)
    document = session.to_dict()
    assert document["fold_records"] == {"fold_failure": FAILURE} and "fold_failure" not in document["memo"]
    assert Session().load_dict(document)._state.fold_records == {"fold_failure": FAILURE}
    older: dict[str, Any] = {key: value for key, value in document.items() if key != "fold_records"}
    older["memo"] = {**document["memo"], "fold_failure": FAILURE, "compression_refused": 900}  # as written before
    loaded = Session().load_dict(older)
    assert loaded._state.fold_records == {"fold_failure": FAILURE, "compression_refused": 900}
    assert "fold_failure" not in loaded.memo and "compression_refused" not in loaded.memo
    with pytest.raises(DocumentError, match="'fold_records' must be a dict"):
        Session().load_dict({**document, "fold_records": [1]})


def test_the_records_are_saved_and_merged_like_the_cursor(store: SessionStore, broken_model: BrokenModel) -> None:
    tenant = fresh_tenant()

    def factory(key: str) -> Session:
        return Session(key, model=broken_model).use_memo(messages=2)

    first, second = SessionManager(store, tenant=tenant, session_factory=factory), SessionManager(store, tenant=tenant, session_factory=factory)
    session = chat(first.get_or_create("k"), 2)
    first.save(session)
    other = second.get_or_create("k")  # a second writer reads the same state
    with pytest.raises(MemoUpdateError):
        session.resize("lite")
    first.save(session)
    chat(other, 1, start=5)  # it changed no records: mine survive its save
    second.save(other)
    reread = SessionManager(store, tenant=tenant, session_factory=factory).get_or_create("k")
    assert reread._state.fold_records["fold_failure"]["count"] == 1 and "fold_failure" not in reread.memo
    assert len(reread.full_chat_history) == 6
