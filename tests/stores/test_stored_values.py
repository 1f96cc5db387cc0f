"""A save keeps every memo, metadata and message value exactly, or refuses it, on every store
(JSONL, SQLite, Postgres alike): no value comes back changed (a NaN as null, a datetime as a
string, a tuple as a list, an int key as a string, an int past 64 bits as a float). A refused
value is named by its path with the fix, and nothing is written."""

from __future__ import annotations

import asyncio
import dataclasses
import datetime
import decimal
from typing import Any
import uuid

from langchain_core.messages import AIMessage
import pytest

from session_graph import SessionManager
from session_graph.errors import MessageError, StoreError
from session_graph.stores import SessionStore


@dataclasses.dataclass
class Point:
    x: int = 1




def _deep(levels: int) -> list[Any]:
    top: list[Any] = []
    inner = top
    for _ in range(levels):
        inner.append([])
        inner = inner[0]
    return top


REFUSED = {
    "nan": (float("nan"), "NaN"),
    "inf": (float("inf"), "infinity"),
    "-inf": (float("-inf"), "infinity"),
    "datetime": (datetime.datetime(2026, 1, 2, 3, 4, 5), "isoformat"),
    "date": (datetime.date(2026, 1, 2), "isoformat"),
    "time": (datetime.time(1, 2), "isoformat"),
    "uuid": (uuid.UUID(int=5), "str("),
    "decimal": (decimal.Decimal("1.10"), "str("),
    "tuple": ((1, 2), "list"),
    "int key": ({1: "a"}, "string"),
    "None key": ({None: 1}, "string"),
    "dataclass": (Point(), "asdict"),
    "bytes": (b"ab", "base64"),
    "set": ({1, 2}, "list"),
    "lone surrogate": ("a\ud800b", "surrogate"),
    "lone surrogate in a key": ({"k\ud800": 1}, "surrogate"),
    "int past 64 bits": (2**64, "string"),
    "negative int past 64 bits": (-(2**63) - 1, "string"),
    "too deep": (_deep(260), "deeper"),
}

KEPT = {
    "nested": {"a": [1, 2.5, None, True, "é\x00", {"b": []}], "c": {}},
    "edges": [2**64 - 1, -(2**63), -0.0, 1e308, 5e-324, "", "\U0001f600"],
    "deep": _deep(190),
}


@pytest.fixture
def key() -> str:
    return f"values-{uuid.uuid4().hex}"  # Postgres: one database for every test, a session of its own each


def _session(manager: SessionManager, key: str) -> Any:
    session = manager.get_or_create(key)
    session.append_message({"role": "user", "content": "hi"})
    return session


@pytest.mark.parametrize("where", ["metadata", "memo"])
@pytest.mark.parametrize("name", list(REFUSED))
def test_a_value_a_store_would_change_is_refused_at_the_save_naming_it(
        store: SessionStore, key: str, where: str, name: str) -> None:
    value, fix = REFUSED[name]
    manager = SessionManager(store)
    session = _session(manager, key)
    manager.save(session)
    getattr(session, where)["v"] = {"inner": value}
    with pytest.raises(StoreError) as caught:
        manager.save(session)
    message = str(caught.value)
    assert f"{where}['v']['inner']" in message and fix in message, message
    loaded = SessionManager(store).get(key)  # nothing written: the last save's state
    assert loaded is not None and "v" not in getattr(loaded, where)


@pytest.mark.parametrize("where", ["metadata", "memo"])
@pytest.mark.parametrize("name", list(KEPT))
def test_every_value_json_keeps_comes_back_exactly(store: SessionStore, key: str, where: str, name: str) -> None:
    value = KEPT[name]
    manager = SessionManager(store)
    session = _session(manager, key)
    getattr(session, where)["v"] = value
    manager.save(session)
    session.append_message({"role": "user", "content": "again"})  # the appended save too
    manager.save(session)
    loaded = SessionManager(store).get(key)
    assert loaded is not None
    got = getattr(loaded, where)["v"]
    assert repr(got) == repr(value)  # repr: 2**64 - 1 as a float would still be == the int


@pytest.mark.parametrize("value", [2**64, -(2**63) - 1, 2**70])
def test_an_int_past_64_bits_in_a_message_is_refused_at_the_append(store: SessionStore, key: str, value: int) -> None:
    """Every store reads its records with orjson, which gives such an int back as a float."""
    session = SessionManager(store).get_or_create(key)
    with pytest.raises(MessageError, match=r"additional_kwargs\.n.*64 bits.*string"):
        session.append_message(AIMessage(content="big", additional_kwargs={"n": value}))


def test_the_biggest_ints_64_bits_hold_in_a_message_come_back_as_ints(store: SessionStore, key: str) -> None:
    manager = SessionManager(store)
    session = _session(manager, key)
    session.append_message(AIMessage(content="big", additional_kwargs={"n": [2**64 - 1, -(2**63)]}))
    manager.save(session)
    loaded = SessionManager(store).get(key)
    assert loaded is not None and repr(loaded.full_chat_history[-1].additional_kwargs) == repr({"n": [2**64 - 1, -(2**63)]})


@pytest.mark.parametrize("where", ["metadata", "memo"])
def test_the_async_save_refuses_as_the_sync_one(store: SessionStore, key: str, where: str) -> None:
    manager = SessionManager(store)

    async def run() -> None:
        session = await manager.aget_or_create(key)
        session.append_message({"role": "user", "content": "hi"})
        await manager.asave(session)
        getattr(session, where)["v"] = [uuid.UUID(int=1)]
        with pytest.raises(StoreError, match=rf"session\.{where}\['v'\]\[0\] is a UUID.*str\(value\)"):
            await manager.asave(session)
        loaded = await SessionManager(store).aget(key)
        assert loaded is not None and "v" not in getattr(loaded, where)
        await store.aclose()  # Postgres: its async pool, on this loop

    asyncio.run(run())
