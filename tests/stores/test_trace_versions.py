"""The JSONL store tells the trace rows a save adds by the trace's version (``ResizeTrace.mark``),
not by dumping it: a full save (``update``) appends them as ``"trace+"`` like an appended save,
the meta file is left for later, and a ``LazyTrace`` a save handed over is the trace as it was
then, however late it is dumped."""

from __future__ import annotations

import json
from pathlib import Path

from session_graph import Session, SessionManager
from session_graph._base.files import encode_name
from session_graph.resize.trace import SAVED_TRACE, ResizeTrace
from session_graph.stores.jsonl_trace import LazyTrace, trace_added


def manager_at(root: Path) -> SessionManager:
    manager = SessionManager(root)
    manager.session_factory = lambda key: Session(key).use_lite(messages=6)
    return manager


def turn(session: Session, i: int) -> None:
    session.append_message({"role": "user", "content": f"question {i}"})
    session.append_message({"role": "assistant", "content": f"answer {i}"})


def resized(session: Session) -> None:
    """Turns until the policy asks for a lite prune, then the prune (one trace record)."""
    while session.judge_resize() is None:
        turn(session, 1000 + len(session.full_chat_history))
    before = len(session.trace)
    session.resize()
    assert len(session.trace) == before + 1


def state_lines(root: Path, key: str = "k") -> list[dict]:
    log = root / "default" / (encode_name(key) + ".jsonl")
    return [json.loads(line) for line in log.read_bytes().splitlines() if line.startswith(b'{"_type": "state"')]


def test_a_full_save_after_a_resize_appends_the_new_trace_rows_and_leaves_the_meta_file(tmp_path: Path) -> None:
    manager = manager_at(tmp_path)
    session = manager.get_or_create("k")
    for i in range(4):
        turn(session, i)
    resized(session)
    manager.save(session)
    meta = tmp_path / "default" / (encode_name("k") + ".meta.json")
    before = meta.read_bytes()
    for i in range(4, 7):
        turn(session, i)
    resized(session)
    session.metadata["topic"] = "changed"  # not a save that only appends: a full one (update)
    session.revision += 1
    manager.save(session)
    assert meta.read_bytes() == before  # not rewritten for the trace
    last = state_lines(tmp_path)[-1]
    assert last["full"] is False and last["set"]["metadata"] == {"topic": "changed"}
    assert len(last["set"]["trace+"]["rows"]) == 1 and last["set"]["trace+"]["keep"] == 2
    again = manager_at(tmp_path).get("k")  # another process: the meta file's trace and the line's rows
    assert again.trace.dump(SAVED_TRACE) == session.trace.dump(SAVED_TRACE) and len(again.trace) == 2


def test_a_full_save_after_appended_prunes_keeps_every_resize(tmp_path: Path) -> None:
    """An appended save after a prune hands the store a LazyTrace; a later resize and a full save
    must still write that resize's row (the lazy trace is the one of its own save, not today's)."""
    manager = manager_at(tmp_path)
    session = manager.get_or_create("k")
    for i in range(2):
        turn(session, i)
    manager.save(session)
    for round_ in range(3):
        for i in range(3):
            turn(session, 10 * round_ + i)
        resized(session)
        manager.save(session)  # appended: the trace goes as a LazyTrace and "trace+" rows
    for i in range(3):
        turn(session, 100 + i)
    resized(session)
    session.metadata["note"] = "full save"
    session.revision += 1
    manager.save(session)
    assert len(session.trace) == 4
    again = manager_at(tmp_path).get("k")
    assert again.trace.dump(SAVED_TRACE) == session.trace.dump(SAVED_TRACE)
    manager.close()
    assert manager_at(tmp_path).get("k").trace.dump(SAVED_TRACE) == session.trace.dump(SAVED_TRACE)


def test_a_lazy_trace_is_the_trace_of_its_save_and_rows_added_are_told_by_version(tmp_path: Path) -> None:
    session = Session("k").use_lite(messages=6)
    for round_ in range(3):
        for i in range(3):
            turn(session, 10 * round_ + i)
        resized(session)
    trace = session.trace
    first = LazyTrace(lambda: trace.dump(SAVED_TRACE), trace, SAVED_TRACE)
    rows_then = [list(row) for row in trace.dump(SAVED_TRACE)["rows"]]
    for i in range(3):
        turn(session, 100 + i)
    resized(session)
    assert first.value()["rows"] == rows_then  # dumped late: the trace as it was at its save
    second = LazyTrace(lambda: trace.dump(SAVED_TRACE), trace, SAVED_TRACE)
    added = trace_added(first, second)
    assert added == {"fields": trace.dump()["fields"], "rows": [trace.dump()["rows"][-1]], "keep": 4}
    assert trace_added(first, first) == {"fields": added["fields"], "rows": [], "keep": 3}
    trace.merge(ResizeTrace([trace[0]]))  # nothing new: not a rewrite
    assert trace.added_since(second.mark) == []
    dumped = LazyTrace(lambda: trace.dump(SAVED_TRACE), trace, SAVED_TRACE)
    dumped.value()  # as a meta file's write dumps it
    trace.replace(ResizeTrace(list(trace)[1:]))  # a rewrite: versions no longer tell, rows are compared
    assert trace.added_since(second.mark) is None
    third = LazyTrace(lambda: trace.dump(SAVED_TRACE), trace, SAVED_TRACE)
    assert trace_added(dumped, third) is None  # its oldest row gone, none added: no "trace+" row says that
    assert trace_added(second, third) is None  # not dumped before the rewrite: what its save held is not known
    trace.replace(ResizeTrace(list(trace)[:-1]))  # the newest record gone: no state line can say that
    assert trace_added(third, LazyTrace(lambda: trace.dump(SAVED_TRACE), trace, SAVED_TRACE)) is None
