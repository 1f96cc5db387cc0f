"""archive: move the session's archive cursor over the claimed messages, in one state change.

The archive index, the cursor and the consumed ``used()`` records change together, with the
journal that the later steps fill in; with a ``SessionManager`` that state is saved at once
(its save merges with other writers under the store's lock, so two processes never claim the
same index). The messages themselves stay in the full history: an archive is a range of it.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from langgraph.runtime import Runtime

from session_graph.commit.journal import journaled
from session_graph.commit.state import CommitContext, CommitState

__all__ = ["archive"]


def archive(state: CommitState, runtime: Runtime[CommitContext]) -> dict[str, Any]:
    """Archive the claimed range (a resumed archive is already archived: nothing to do)."""
    journal, ctx = state.journal, runtime.context
    route = "archive" if ctx.wait else "archive only"  # wait=False: the rest runs on the next commit
    if journal.get("archived") or ctx.dry_run:
        return {"route": route}
    session = state.session
    consumed = {record.get("id") for record in journal["usage"]}
    moved = replace(
        session,
        archived_through=max(session.archived_through, journal["end"]),
        usage=tuple(r for r in session.usage if r.get("id") not in consumed),
        archives={**(session.archives or {}), "next": journal["index"] + 1},
    )
    return {**journaled(replace(state, session=moved), ctx, archived=True), "route": route}
