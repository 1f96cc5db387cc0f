"""claim: resume the pending archive, or claim the messages no commit archived yet."""

from __future__ import annotations

import logging
from typing import Any

from langchain_core.messages import ToolMessage
from langgraph.runtime import Runtime

from session_graph.commit.journal import pending
from session_graph.commit.state import CommitContext, CommitState
from session_graph.commit.trust import trusted_journal

__all__ = ["NOTHING", "claim"]

NOTHING = "nothing to commit"
log = logging.getLogger(__name__)


def claim(state: CommitState, runtime: Runtime[CommitContext]) -> dict[str, Any]:
    """The archive to work on: a pending one (a commit that stopped) first, its journal kept only
    as far as this owner's config could have produced it (see ``commit/trust.py``); else a new
    one over ``archived_through .. end`` and the ``used()`` records not consumed yet."""
    session = state.session
    waiting = pending(session)
    if waiting:
        name = min(waiting)
        memory = runtime.context.memory
        journal, reasons = trusted_journal(dict(waiting[name]), memory.memory_store, memory.user, memory.agent,
                                           tenant=memory.tenant)
        for reason in reasons:
            log.warning("session %r, pending %s: %s", session.id, name, reason)
        return {"name": name, "journal": journal, "route": "resume"}
    start = session.archived_through
    full = session.full_chat_history
    end = max(start, len(full) - runtime.context.keep_recent)
    while start < end < len(full) and isinstance(full[end], ToolMessage):
        end -= 1  # never archive a tool call without its results
    if start >= end and not session.usage:
        return {"route": NOTHING}
    index = max(int((session.archives or {}).get("next", 1) or 1), 1)
    journal = {"index": index, "start": start, "end": end, "usage": [dict(r) for r in session.usage],
               "created_at": runtime.context.now}
    return {"name": f"archive_{index:03d}", "journal": journal, "route": "claimed"}
