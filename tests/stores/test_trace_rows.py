"""A lite prune's trace records travel in its appended state line (``"trace+"``, the rows the
save added), not in a rewrite of the meta file: a reader replays them on the meta file's trace
(keeping the newest ``SAVED_TRACE``), so a crash that leaves the meta file behind, a reload, an
old writer's log and a merge with another writer all keep every record."""

from __future__ import annotations

import json
from pathlib import Path
import warnings

import pytest

from session_graph import Session, SessionManager
from session_graph._base.files import encode_name
from session_graph.resize.trace import SAVED_TRACE
from session_graph.stores import JsonlStore
from session_graph.stores.jsonl_state import replay
from session_graph.stores.jsonl_trace import grow_trace, trace_added


def files(root: Path) -> tuple[Path, Path]:
    base = root / "default" / encode_name("k")
    return base.with_name(base.name + ".jsonl"), base.with_name(base.name + ".meta.json")


def prunes(manager: SessionManager, session: Session, start: int, stop: int) -> int:
    """Turns ``start..stop-1`` (a question and an answer each), each saved, then a lite prune
    (saved) whenever the policy asks; how many pruned."""
    pruned = 0
    for i in range(start, stop):
        session.append_message({"role": "user", "content": f"question {i}", "id": f"u{i}"})
        session.append_message({"role": "assistant", "content": f"answer {i}", "id": f"a{i}"})
        manager.save(session)
        if session.judge_resize() is not None:
            session.resize()
            manager.save(session)
            pruned += 1
    return pruned


def rewrites(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Each rewrite of a meta file (``JsonlStore._replace``)."""
    seen: list[int] = []
    real = JsonlStore._replace

    def counted(self, *args, **kwargs):
        seen.append(1)
        return real(self, *args, **kwargs)

    monkeypatch.setattr(JsonlStore, "_replace", counted)
    return seen


def test_appended_prunes_carry_their_trace_records_and_leave_the_meta_file_alone(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    manager = SessionManager(tmp_path)
    session = manager.get_or_create("k").use_lite(messages=6)
    prunes(manager, session, 0, 2)
    seen = rewrites(monkeypatch)
    pruned = prunes(manager, session, 2, 10)
    assert pruned >= 4 and seen == []  # no meta rewrite for a prune's trace
    log = files(tmp_path)[0]
    added = [json.loads(line)["set"]["trace+"] for line in log.read_bytes().splitlines() if b'"trace+"' in line]
    assert len(added) == len(session.trace) and all(len(a["rows"]) == 1 for a in added)  # one new row a prune, never the whole trace
    assert [a["keep"] for a in added] == list(range(1, len(added) + 1))
    assert JsonlStore(tmp_path).read("default", "k").state["trace"] == session.trace.dump(SAVED_TRACE)


def test_a_crash_that_leaves_the_meta_file_behind_keeps_every_trace_record(tmp_path: Path) -> None:
    manager = SessionManager(tmp_path)
    session = manager.get_or_create("k").use_lite(messages=4)
    prunes(manager, session, 0, 3)
    meta = files(tmp_path)[1]
    manager.store._replace(meta, *manager.store._written.get(meta)[:2])  # the meta file as of now, trace included
    behind = meta.read_bytes()
    assert json.loads(behind)["trace"]["rows"]
    prunes(manager, session, 3, SAVED_TRACE + 30)  # past SAVED_TRACE records: the newest are kept
    manager.close()
    assert len(session.trace) > SAVED_TRACE
    meta.write_bytes(behind)  # a power loss: the meta file is older than the log
    again = SessionManager(tmp_path).get("k")
    assert again.trace.dump(SAVED_TRACE) == session.trace.dump(SAVED_TRACE) and len(again.trace) == SAVED_TRACE
    assert [m.id for m in again.current_chat_history] == [m.id for m in session.current_chat_history]
    meta.unlink()  # the log alone: every record since its first state line
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # the rebuild from the log is reported
        rebuilt = SessionManager(tmp_path).get("k")
    assert rebuilt.trace.dump(SAVED_TRACE) == session.trace.dump(SAVED_TRACE)


def test_an_old_writers_state_lines_without_trace_rows_still_load(tmp_path: Path) -> None:
    manager = SessionManager(tmp_path)
    session = manager.get_or_create("k").use_lite(messages=6)
    assert prunes(manager, session, 0, 8) >= 3
    manager.close()
    log, meta = files(tmp_path)
    kept = json.loads(meta.read_bytes()).get("trace")
    old = []  # the log as a writer before "trace+" left it: the same state lines without the field
    for line in log.read_bytes().splitlines():
        if b'"trace+"' in line:
            data = json.loads(line)
            del data["set"]["trace+"]
            line = b'{"_type": "state", "full": false, "set": ' + json.dumps(data["set"]).encode()
            line += b"}"
        old.append(line + b"\n")
    log.write_bytes(b"".join(old))
    meta.unlink()  # its offsets describe the other log: rebuilt from this one
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        again = SessionManager(tmp_path).get("k")
    assert [m.id for m in again.current_chat_history] == [m.id for m in session.current_chat_history]
    assert [m.id for m in again.full_chat_history] == [m.id for m in session.full_chat_history]
    assert len(again.trace) == 0 and kept is None  # the old writer kept its trace in a meta file, lost with it here
    replayed, _ = replay([(b'{"_type": "state", "full": false, "set": {"turns": 9}}', 10)], {"turns": 8, "trace": {"fields": ["seq"], "rows": [[1]]}})
    assert replayed == {"turns": 9, "trace": {"fields": ["seq"], "rows": [[1]]}}  # a line without trace+ keeps the meta file's trace


def test_a_merge_with_another_writer_keeps_both_writers_trace_records(tmp_path: Path) -> None:
    mine, theirs = SessionManager(tmp_path), SessionManager(tmp_path)
    session = mine.get_or_create("k").use_lite(messages=6)
    assert prunes(mine, session, 0, 6) >= 2
    other = theirs.get("k")  # read from the meta file and the log's "trace+" rows
    assert other.trace.dump(SAVED_TRACE) == session.trace.dump(SAVED_TRACE)
    assert prunes(theirs, other, 100, 104) >= 1  # the other writer prunes too (appended: its own trace rows)
    assert prunes(mine, session, 6, 10) >= 1  # merged on top of theirs, then appended again
    theirs.close()
    mine.close()
    stored = SessionManager(tmp_path).get("k")
    records = {(r.at, r.turn, r.history) for r in stored.trace}
    assert {(r.at, r.turn, r.history) for r in session.trace} <= records
    assert {(r.at, r.turn, r.history) for r in other.trace} <= records


def test_trace_rows_only_for_a_trace_grown_at_its_end_and_a_damaged_field_costs_only_the_trace() -> None:
    names = ["seq", "at"]
    a, b, c = [1, "x"], [2, "y"], [3, "z"]
    assert trace_added(None, {"fields": names, "rows": [a]}) == {"fields": names, "rows": [a], "keep": 1}
    assert trace_added({"fields": names, "rows": [a, b]}, {"fields": names, "rows": [b, c]}) == {"fields": names, "rows": [c], "keep": 2}
    for old, new in (([a, b], [b, c]), ([a, b], [b, a, c]), ([a], [a, b, c]), ([], [c])):  # replayed, the trace the writer held
        before, after = {"fields": names, "rows": old}, {"fields": names, "rows": new}
        assert grow_trace(before, trace_added(before, after)) == after
    assert trace_added({"fields": names, "rows": [a, b]}, {"fields": names, "rows": [a, c]}) is None  # its newest row gone (merged)
    assert trace_added({"fields": names, "rows": [b, c]}, {"fields": names, "rows": [a, c]}) is None  # not its newest rows
    assert trace_added({"fields": names, "rows": [a]}, {"fields": names, "rows": []}) is None  # cleared
    assert trace_added({"fields": ["seq"], "rows": [[1]]}, {"fields": names, "rows": [a]}) is None  # other fields
    assert grow_trace({"fields": names, "rows": [a, b]}, {"fields": names, "rows": [c], "keep": 2}) == {"fields": names, "rows": [b, c]}
    assert grow_trace(None, {"fields": names, "rows": [c], "keep": 2}) == {"fields": names, "rows": [c]}
    line = b'{"_type": "state", "full": false, "set": {"turns": 3, "trace+": {"rows": "damaged"}}}'
    replayed, end = replay([(line, 99)], {"turns": 2, "trace": {"fields": names, "rows": [a]}})
    assert end == 99 and replayed == {"turns": 3, "trace": {"fields": names, "rows": [a]}}
