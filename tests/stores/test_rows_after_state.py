"""SQL stores: message rows added behind the store's back (by hand, another tool), past the
session's ``message_count``, reach the live session of a manager that saved before them, and its
window, once and in order, as another writer's save does. Before, the next save numbered its
first message with the row's seq and failed on the primary key (a raw ``IntegrityError``), every
save after it too; the version did not move, so nothing merged them."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
import sqlite3
from typing import Any

from langchain_core.messages import AIMessage, HumanMessage
import pytest
from stores_util import fresh_tenant, hand_message, make_store, postgres_dsn

from session_graph import SessionManager


@pytest.fixture(params=["sqlite", "postgres"])
def kind(request: pytest.FixtureRequest) -> str:
    return request.param


def by_hand(kind: str, tmp_path: Path, tenant: str, message_id: str, seq: int) -> None:
    """A message row inserted without touching the session row (another tool writing the table)."""
    data = json.dumps(hand_message(message_id))
    row = (tenant, "k", seq, message_id, "2026-01-01T00:00:00Z", "user", f"text of {message_id}", data)
    sql = "INSERT INTO sg_messages (tenant, key, seq, id, ts, role, text, data) VALUES (?, ?, ?, ?, ?, ?, ?, ?)"
    if kind == "sqlite":
        with sqlite3.connect(tmp_path / "store.sqlite3") as connection:
            connection.execute(sql, row)
        return
    psycopg = pytest.importorskip("psycopg")
    with psycopg.connect(postgres_dsn()) as connection:
        connection.execute(sql.replace("?", "%s"), row)


def ids(messages: Any) -> list[str | None]:
    return [m.id for m in messages]


@pytest.mark.parametrize("save", ["sync", "async"])
def test_rows_added_behind_the_stores_back_are_merged_into_the_live_window(kind: str, tmp_path: Path, save: str) -> None:
    tenant = fresh_tenant()
    store = make_store(kind, tmp_path)
    manager = SessionManager(store, tenant=tenant)
    session = manager.get_or_create("k")
    session.append_message(HumanMessage("one", id="m1"))
    session.append_message(AIMessage("two", id="m2"))
    manager.save(session)
    by_hand(kind, tmp_path, tenant, "hand0", 2)
    by_hand(kind, tmp_path, tenant, "hand1", 3)
    assert store.version(tenant, "k") == 3 and [i.message_count for i in store.list(tenant)] == [4]
    other = make_store(kind, tmp_path)
    assert other.read(tenant, "k").version == other.read(tenant, "k", window=True).version == 3
    session.append_message(HumanMessage("three", id="m3"))
    if save == "sync":
        manager.save(session)
    else:
        asyncio.run(manager.asave(session))
    assert store.version(tenant, "k") == 4  # above every number the session showed
    expected = ["m1", "m2", "hand0", "hand1", "m3"]
    stored = SessionManager(other, tenant=tenant).get("k")
    assert stored is not None
    for each in (session, stored):
        assert ids(each.full_chat_history) == expected and ids(each.current_chat_history) == expected
    session.append_message(HumanMessage("four", id="m4"))
    manager.save(session)  # merged once: neither repeated nor lost
    third = make_store(kind, tmp_path)
    again = SessionManager(third, tenant=tenant).get("k")
    for each in (third, other, store):
        each.close()
    assert again is not None and ids(again.current_chat_history) == [*expected, "m4"] == ids(session.current_chat_history)
