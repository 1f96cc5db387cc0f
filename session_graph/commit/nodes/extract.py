"""extract: candidate memories in the archived messages (six categories)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from langgraph.runtime import Runtime

from session_graph._base.flow import Flow, Invoke
from session_graph.commit.budget import over_budget, record_reply
from session_graph.commit.journal import FAILED, journaled
from session_graph.commit.state import CommitContext, CommitState
from session_graph.llm.replies import structured
from session_graph.memory.categories import CATEGORIES
from session_graph.memory.items import clean_terms
from session_graph.memory.prefilter import key_catalogue
from session_graph.memory.prompts import extract_prompt, transcript_chunks
from session_graph.memory.replies import Extraction, parse_extraction

__all__ = ["NO_CANDIDATES", "NO_MODEL", "extract"]

NO_MODEL = "no model"
NO_CANDIDATES = "no candidates"
MAX_CANDIDATES = 50
"""The most memories one extraction reply may propose (more: the first ones, with a warning)."""


def extract(state: CommitState, runtime: Runtime[CommitContext]) -> Flow[dict[str, Any]]:
    """One model call (one per chunk of an archive longer than ``max_input_chars``, each with
    the archive's overview); candidates found twice across chunks are kept once, the later
    one. Journaled per chunk: a resume neither asks again nor loses what was found. The prompt
    lists the keys already stored (preferences, entities, patterns), so a fact about the same
    thing reuses its key."""
    journal, ctx = state.journal, runtime.context
    if "candidates" in journal:
        return {"route": NO_CANDIDATES if not journal["candidates"] else "extracted"}
    if ctx.model is None:
        return {**journaled(state, ctx, candidates=[]), "route": NO_MODEL}
    messages = list(state.session.full_chat_history[journal["start"] : journal["end"]])
    if not messages:
        return {**journaled(state, ctx, candidates=[]), "route": NO_CANDIDATES}
    chunks = transcript_chunks(messages, ctx.max_input_chars)
    try:
        catalogue = key_catalogue(ctx.memory.memory_store, [ctx.memory.namespace(c)
                                                            for c, rule in CATEGORIES.items() if rule.mergeable and c != "profile"])
    except Exception:  # a failing store: the prefilter step reports it; the extraction goes on without the list
        catalogue = []
    done = journal.get("extract_chunks", 0)
    found: list[dict[str, Any]] = list(journal.get("partial_candidates") or []) if done else []
    update: dict[str, Any] = {}
    asked = structured(ctx.model, Extraction) or ctx.model  # structured output where the model has it
    warnings = list(journal.get("warnings") or [])
    for index in range(done, len(chunks)):
        prompt = extract_prompt(chunks[index], journal.get("overview", ""), catalogue, ctx.memory.user)
        reason = over_budget(ctx, prompt, "extract" + (f" (chunk {index + 1} of {len(chunks)})" if len(chunks) > 1 else ""))
        if reason is not None:
            return {**update, "errors": [*state.errors, reason], "route": FAILED}
        try:
            reply = yield Invoke(asked, prompt)
            record_reply(ctx, reply)
            proposed = [c.model_dump() for c in parse_extraction(reply)]
            if len(proposed) > MAX_CANDIDATES:  # a runaway reply: the first ones, and say so
                warnings = [*warnings, f"extract: a reply proposed {len(proposed)} memories; the first {MAX_CANDIDATES} were kept"]
                proposed = proposed[:MAX_CANDIDATES]
            found = _once([*found, *proposed])
        except Exception as error:
            where = f" (chunk {index + 1} of {len(chunks)})" if len(chunks) > 1 else ""
            return {**update, "errors": [*state.errors, f"extract{where}: {type(error).__name__}: {error}"], "route": FAILED}
        if index + 1 < len(chunks):
            update = journaled(state, ctx, extract_chunks=index + 1, partial_candidates=found)
            state = replace(state, **update)
    return {**journaled(state, ctx, candidates=found, warnings=warnings), "route": "extracted" if found else NO_CANDIDATES}


def _once(candidates: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Candidates without repeats (same category and key, or same text), the later one kept where the first stood."""
    kept: dict[tuple[str, str], dict[str, Any]] = {}
    for candidate in candidates:
        text = candidate.get("key") or " ".join(str(candidate.get("content", "")).lower().split())
        before = kept.get((candidate.get("category", ""), text))
        if before is not None and before.get("terms"):  # the earlier one's retrieval terms are kept too
            candidate = {**candidate, "terms": clean_terms([candidate.get("terms"), before["terms"]])}
        kept[(candidate.get("category", ""), text)] = candidate
    return list(kept.values())
