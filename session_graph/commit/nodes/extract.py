"""extract: candidate memories in the archived messages (six categories)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from langgraph.runtime import Runtime

from session_graph._base.flow import Flow, Invoke
from session_graph.commit.journal import FAILED, journaled
from session_graph.commit.state import CommitContext, CommitState
from session_graph.memory.prompts import extract_prompt, transcript_chunks
from session_graph.memory.replies import parse_extraction

__all__ = ["NO_CANDIDATES", "NO_MODEL", "extract"]

NO_MODEL = "no model"
NO_CANDIDATES = "no candidates"


def extract(state: CommitState, runtime: Runtime[CommitContext]) -> Flow[dict[str, Any]]:
    """One model call (one per chunk of an archive longer than ``max_input_chars``, each with
    the archive's overview); candidates found twice across chunks are kept once, the later
    one. Journaled per chunk: a resume neither asks again nor loses what was found."""
    journal, ctx = state.journal, runtime.context
    if "candidates" in journal:
        return {"route": NO_CANDIDATES if not journal["candidates"] else "extracted"}
    if ctx.model is None:
        return {**journaled(state, ctx, candidates=[]), "route": NO_MODEL}
    messages = list(state.session.full_chat_history[journal["start"] : journal["end"]])
    if not messages:
        return {**journaled(state, ctx, candidates=[]), "route": NO_CANDIDATES}
    chunks = transcript_chunks(messages, ctx.max_input_chars)
    done = journal.get("extract_chunks", 0)
    found: list[dict[str, Any]] = list(journal.get("partial_candidates") or []) if done else []
    update: dict[str, Any] = {}
    for index in range(done, len(chunks)):
        try:
            reply = yield Invoke(ctx.model, extract_prompt(chunks[index], journal.get("overview", ""), [], ctx.memory.user))
            found = _once([*found, *(c.model_dump() for c in parse_extraction(reply))])
        except Exception as error:
            where = f" (chunk {index + 1} of {len(chunks)})" if len(chunks) > 1 else ""
            return {**update, "errors": [*state.errors, f"extract{where}: {type(error).__name__}: {error}"], "route": FAILED}
        if index + 1 < len(chunks):
            update = journaled(state, ctx, extract_chunks=index + 1, partial_candidates=found)
            state = replace(state, **update)
    return {**journaled(state, ctx, candidates=found), "route": "extracted" if found else NO_CANDIDATES}


def _once(candidates: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Candidates without repeats (same category and key, or same text), the later one kept where the first stood."""
    kept: dict[tuple[str, str], dict[str, Any]] = {}
    for candidate in candidates:
        text = candidate.get("key") or " ".join(str(candidate.get("content", "")).lower().split())
        kept[(candidate.get("category", ""), text)] = candidate
    return list(kept.values())
