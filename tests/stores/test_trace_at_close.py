"""A lite prune's save appends its records and a state line; the resize trace is a field of the
meta file only, which a save rewrites once the log is far enough ahead (``_META_LAG``). A
session whose last saves left the meta file behind lost its trace when the store was closed and
loaded again (also before issue 25's lazy trace): ``close`` now writes such meta files."""

from __future__ import annotations

from pathlib import Path

from langchain_core.messages import AIMessage, HumanMessage

from session_graph import SessionManager
from session_graph.stores import JsonlStore


def test_a_lite_prunes_trace_survives_close_and_a_reload(tmp_path: Path) -> None:
    manager = SessionManager(JsonlStore(tmp_path))
    session = manager.get_or_create("k").use_lite(messages=4)
    for i in range(4):
        session.append_message(HumanMessage(content=f"u{i}", id=f"u{i}"))
        session.append_message(AIMessage(content=f"a{i}", id=f"a{i}"))
    manager.save(session)
    session.append_message(HumanMessage(content="u4", id="u4"))
    session.resize("lite")
    manager.save(session)  # an append: records and a state line, the meta file left behind
    assert len(session.trace) == 1
    manager.close()
    again = SessionManager(tmp_path).get("k")
    assert again is not None and [r.seq for r in again.trace] == [r.seq for r in session.trace]
    assert [m.id for m in again.current_chat_history] == [m.id for m in session.current_chat_history]
