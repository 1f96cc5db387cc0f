"""extract: candidate memories in the archived messages (six categories)."""

from __future__ import annotations

from typing import Any

from langgraph.runtime import Runtime

from session_graph._flow import Flow, Invoke
from session_graph.commit.journal import FAILED, journaled
from session_graph.commit.state import CommitContext, CommitState
from session_graph.memory.prompts import extract_prompt, memory_transcript
from session_graph.memory.replies import parse_extraction

__all__ = ["NO_CANDIDATES", "NO_MODEL", "extract"]

NO_MODEL = "no model"
NO_CANDIDATES = "no candidates"


def extract(state: CommitState, runtime: Runtime[CommitContext]) -> Flow[dict[str, Any]]:
    """One model call; the candidates are journaled (a resume does not ask again)."""
    journal, ctx = state.journal, runtime.context
    if "candidates" in journal:
        return {"route": NO_CANDIDATES if not journal["candidates"] else "extracted"}
    if ctx.model is None:
        return {**journaled(state, ctx, candidates=[]), "route": NO_MODEL}
    messages = list(state.session.full_chat_history[journal["start"] : journal["end"]])
    if not messages:
        return {**journaled(state, ctx, candidates=[]), "route": NO_CANDIDATES}
    try:
        reply = yield Invoke(ctx.model, extract_prompt(memory_transcript(messages), journal.get("overview", ""), [],
                                                       ctx.memory.user))
        candidates = [c.model_dump() for c in parse_extraction(reply)]
    except Exception as error:
        return {"errors": [*state.errors, f"extract: {type(error).__name__}: {error}"], "route": FAILED}
    return {**journaled(state, ctx, candidates=candidates), "route": "extracted" if candidates else NO_CANDIDATES}
