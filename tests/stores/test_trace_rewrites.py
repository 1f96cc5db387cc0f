"""A trace rewritten (replaced, or merged with another writer's record) after appended saves
reaches the store: the LazyTrace those saves handed over, not dumped yet, cannot say what they
held, so the next save rewrites the meta file rather than comparing with today's trace."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from test_trace_versions import manager_at, resized, turn

from session_graph.resize.trace import SAVED_TRACE, ResizeTrace


def rewrite(trace: ResizeTrace, how: str) -> None:
    if how == "replace":  # an import, a load adopting the stored trace
        trace.replace(ResizeTrace(list(trace)[:1]))
    else:  # a merge adopting another writer's record (older than ours)
        trace.merge(ResizeTrace([dataclasses.replace(trace[0], at="2000-01-01T00:00:00+00:00")]))


@pytest.mark.parametrize("how", ["replace", "merge"])
@pytest.mark.parametrize("save", ["full", "appended"])
def test_a_trace_rewritten_after_appended_saves_is_what_the_store_holds(tmp_path: Path, how: str, save: str) -> None:
    manager = manager_at(tmp_path)
    session = manager.get_or_create("k")
    for i in range(2):
        turn(session, i)
    manager.save(session)
    for round_ in range(3):
        for i in range(3):
            turn(session, 10 * round_ + i)
        resized(session)
        manager.save(session)  # appended after a prune: a LazyTrace, "trace+" rows, the meta file left
    rewrite(session.trace, how)
    for i in range(3):
        turn(session, 200 + i)
    if save == "full":
        session.metadata["note"] = "a full save"
        session.revision += 1
    else:
        resized(session)  # appended again, after a prune
    manager.save(session)
    live = session.trace.dump(SAVED_TRACE)
    assert manager_at(tmp_path).get("k").trace.dump(SAVED_TRACE) == live  # another process, now
    manager.close()
    assert manager_at(tmp_path).get("k").trace.dump(SAVED_TRACE) == live


def test_a_trace_that_lost_its_oldest_records_is_what_the_store_holds(tmp_path: Path) -> None:
    """The trace now its old newest rows with nothing added (the oldest record gone: an import of
    a shorter trace): no "trace+" row can say that, so the meta file is rewritten."""
    manager = manager_at(tmp_path)
    session = manager.get_or_create("k")
    for round_ in range(3):
        for i in range(3):
            turn(session, 10 * round_ + i)
        resized(session)
        session.metadata["round"] = round_
        session.revision += 1
        manager.save(session)  # full saves: the store's trace is a dump, not a LazyTrace
    session.trace.replace(ResizeTrace(list(session.trace)[1:]))
    session.metadata["note"] = "after the import"
    session.revision += 1
    manager.save(session)
    live = session.trace.dump(SAVED_TRACE)
    assert len(live["rows"]) == 2
    assert manager_at(tmp_path).get("k").trace.dump(SAVED_TRACE) == live
    manager.close()
    assert manager_at(tmp_path).get("k").trace.dump(SAVED_TRACE) == live
