"""finalize: close the archive (its record kept, its journal dropped) or leave it pending on errors."""

from __future__ import annotations

from typing import Any

from langgraph.runtime import Runtime

from session_graph.commit.journal import pending, with_archives
from session_graph.commit.state import CommitContext, CommitState

__all__ = ["finalize"]


def finalize(state: CommitState, runtime: Runtime[CommitContext]) -> dict[str, Any]:
    """A finished archive leaves ``pending`` for ``done`` (range, abstract, time); its overview
    becomes the one the next archive's summary carries forward."""
    ctx, journal = runtime.context, state.journal
    if ctx.dry_run or state.errors or state.name is None or not journal.get("archived") or not ctx.wait:
        return {}
    session = state.session
    waiting = pending(session)
    waiting.pop(state.name, None)
    done = {**((session.archives or {}).get("done") or {}),
            state.name: {"start": journal["start"], "end": journal["end"], "abstract": journal.get("abstract", ""),
                         "overview": journal.get("overview", ""), "created_at": journal.get("created_at", ctx.now)}}
    session = with_archives(session, pending=waiting, done=done, last_overview=journal.get("overview", ""))
    if ctx.checkpoint is not None:
        ctx.checkpoint(session)
    return {"session": session}
