"""The archive's journal: each finished step's result, kept in the session state until finalize."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from session_graph.commit.state import CommitContext, CommitState
from session_graph.resize.state import SessionState

__all__ = ["FAILED", "journaled", "pending", "with_archives"]

FAILED = "failed"


def pending(session: SessionState) -> dict[str, Any]:
    """The archives whose commit has not finished, by name."""
    return dict((session.archives or {}).get("pending") or {})


def with_archives(session: SessionState, **changes: Any) -> SessionState:
    """``session`` with its commit ledger changed (the rest shared, not copied)."""
    return replace(session, archives={**(session.archives or {}), **changes})


def journaled(state: CommitState, ctx: CommitContext, **entries: Any) -> dict[str, Any]:
    """The update recording ``entries`` in the journal; once archived (and not a dry run) the
    journal is written into the session state and checkpointed."""
    journal = {**state.journal, **entries}
    update: dict[str, Any] = {"journal": journal}
    if journal.get("archived") and not ctx.dry_run and state.name is not None:
        session = with_archives(state.session, pending={**pending(state.session), state.name: journal})
        update["session"] = session
        if ctx.checkpoint is not None:
            ctx.checkpoint(session)
    return update
