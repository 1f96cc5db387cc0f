"""Records decoded one at a time (stores/records.py) and the reads that hand them out."""

from __future__ import annotations

import json
from pathlib import Path

from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
import pytest

from session_graph._base.memory import trim_heap
from session_graph.errors import StoreError
from session_graph.stores import JsonlStore, SessionManager, SqliteStore
from session_graph.stores.codec import message_record, messages_of
from session_graph.stores.jsonl_log import decode
from session_graph.stores.records import LineRecords, PackedRecords, PackedRows, Records, RowRecords


def _messages(count: int) -> list:
    out = []
    for i in range(count):
        if i % 3 == 2:
            out.append(AIMessage(content="", id=f"a{i}", tool_calls=[{"id": f"c{i}", "name": "f", "args": {"q": i}}]))
            out.append(ToolMessage(content=[{"type": "text", "text": f"r{i}"}], tool_call_id=f"c{i}", name="f", id=f"t{i}"))
        else:
            out.append(HumanMessage(content=f"hello {i} é", id=f"h{i}", name="ann"))
    return out


def test_line_records_decode_on_read_slice_and_compare() -> None:
    lines = [json.dumps({"seq": i, "v": i}).encode() for i in range(5)]
    buffer = b"\n".join(lines) + b"\n"
    records = LineRecords(buffer, json.loads)
    position = 0
    for line in lines:
        records.add(position, position + len(line))
        position += len(line) + 1
    assert len(records) == 5 and records[-1] == {"seq": 4, "v": 4}
    assert records == [{"seq": i, "v": i} for i in range(5)]
    assert [{"seq": i, "v": i} for i in range(5)] == records  # list == Records, reflected
    assert records[1:4] == [{"seq": i, "v": i} for i in range(1, 4)] and isinstance(records[1:4], Records)
    with pytest.raises(IndexError):
        records[5]
    assert list(records.drain()) == [{"seq": i, "v": i} for i in range(5)]
    with pytest.raises(StoreError, match="already read once"):
        records[0]  # spent: its buffer is gone
    records = LineRecords(buffer, json.loads)
    records.clear()
    assert len(records) == 0 and records == []


def test_row_records_drain_spends_them() -> None:
    records = RowRecords([(1, "a"), (2, "b")], lambda row: {"seq": row[0], "id": row[1]})
    assert records[0:1] == [{"seq": 1, "id": "a"}]
    assert list(records.drain()) == [{"seq": 1, "id": "a"}, {"seq": 2, "id": "b"}]
    with pytest.raises(StoreError, match="already read once"):
        records[0]


def test_packed_rows_keep_texts_in_one_buffer() -> None:
    packed = PackedRows()
    for seq, text in enumerate(['{"x": 1}', '{"y": "é"}', b'{"z": [1]}']):
        packed.add((seq, f"id{seq}", text))
    assert bytes(packed.buffer) == '{"x": 1}{"y": "é"}{"z": [1]}'.encode()
    records = PackedRecords(packed, lambda head, text: {"seq": head[0], "id": head[1], "data": json.loads(bytes(text))})
    assert [r["data"] for r in records] == [{"x": 1}, {"y": "é"}, {"z": [1]}]
    assert records[1:][0] == {"seq": 1, "id": "id1", "data": {"y": "é"}}
    assert [r["seq"] for r in records.drain()] == [0, 1, 2]
    with pytest.raises(StoreError, match="already read once"):
        list(records)


def test_messages_of_one_pass_keeps_fields_and_arrival() -> None:
    messages = _messages(9)
    records = [{**message_record(m, f"2026-01-0{i % 9 + 1}T00:00:00Z"), "seq": i} for i, m in enumerate(messages)]
    arrived: dict[str, str] = {}
    rows = RowRecords(records, dict)
    made = messages_of(rows, "here", arrived=arrived)
    assert made == messages  # every field: tool calls, content blocks, names, ids
    assert [m.id for m in made] == list(arrived) and arrived["h0"] == "2026-01-01T00:00:00Z"
    assert all(made[i].id is next(k for k in arrived if k == made[i].id) for i in range(len(made)))  # the id string is shared


@pytest.mark.parametrize("kind", ["jsonl", "sqlite"])
@pytest.mark.parametrize("lazy", [False, True])
def test_loaded_session_round_trips(tmp_path: Path, kind: str, lazy: bool) -> None:
    make = (lambda: JsonlStore(tmp_path / "j", fsync=False)) if kind == "jsonl" else (lambda: SqliteStore(tmp_path / "s.db"))
    store = make()
    manager = SessionManager(store)
    session = manager.get_or_create("k")
    session.set_settings("session.resize.every_n_turns", 0)
    messages = _messages(3000)
    for message in messages:
        session.append_message(message)
    if lazy:
        session.use_lite(chars=400)
        session.resize()
    manager.save(session)
    store.close()
    store = make()
    loaded = SessionManager(store).get_or_create("k")
    assert type(loaded.full_chat_history).__name__ == ("LazyHistory" if lazy else "list")
    assert list(loaded.full_chat_history) == messages
    assert [m.id for m in loaded.current_chat_history] == [m.id for m in session.current_chat_history]
    assert set(loaded.arrived_at) >= {m.id for m in session.current_chat_history}
    store.close()


def test_sqlite_damaged_row_names_it(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "s.db")
    store.write("t", "k", [message_record(m, "2026-01-01T00:00:00Z") for m in _messages(6)], {"updated_at": "x"})
    store._connection.execute("UPDATE sg_messages SET data = '{broken' WHERE seq = 3")
    snapshot = store.read("t", "k")
    assert snapshot is not None and snapshot.records[2]["seq"] == 2
    with pytest.raises(StoreError, match="message 3 holds broken JSON"):
        snapshot.records[3]
    store._connection.execute("""UPDATE sg_messages SET data = '{"type": "human", "data": {"content": "x", "type": "human", "v": NaN}}' WHERE seq = 3""")
    assert store.read("t", "k").records[3]["message"]["data"]["content"] == "x"  # the json module's NaN is read as before
    store.close()


def test_jsonl_read_since_seeks_and_reads_what_a_full_read_does(tmp_path: Path) -> None:
    store = JsonlStore(tmp_path, fsync=False)
    store.write("t", "k", [message_record(m, "2026-01-01T00:00:00Z") for m in _messages(3500)], {"updated_at": "x"})
    log = next(tmp_path.rglob("*.jsonl"))
    state = json.loads(next(tmp_path.rglob("*.meta.json")).read_text())
    assert len(state["offsets"]) >= 3
    for since in (0, 1, 999, 1000, 2500, len(_messages(3500)) - 1):
        full, _ = decode(log, since)
        sought, bad = decode(log, since, state["offsets"])
        assert not bad and sought == full and sought[0]["seq"] == since
    snapshot = store.read("t", "k", since=2100)
    assert snapshot is not None and snapshot.records[0]["seq"] == 2100


def test_jsonl_bad_line_after_a_seek_is_numbered_from_the_top(tmp_path: Path) -> None:
    store = JsonlStore(tmp_path, fsync=False)
    store.write("t", "k", [message_record(m, "2026-01-01T00:00:00Z") for m in _messages(1500)], {"updated_at": "x"})
    log = next(tmp_path.rglob("*.jsonl"))
    state = json.loads(next(tmp_path.rglob("*.meta.json")).read_text())
    lines = log.read_bytes().split(b"\n")
    number = next(i for i, line in enumerate(lines) if b'"seq": 1500}' in line)
    lines[number] = b"{not json"
    log.write_bytes(b"\n".join(lines))
    records, bad = decode(log, 1200, state["offsets"])
    assert [n for n, _ in bad] == [number] and records[0]["seq"] == 1200


def test_trim_heap_is_harmless() -> None:
    assert trim_heap() in (True, False)
