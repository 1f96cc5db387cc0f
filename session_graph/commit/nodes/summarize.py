"""summarize: the archive's overview (a fixed Markdown skeleton) and its one-line abstract, in
chunks for an archive longer than one prompt should carry."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from langgraph.runtime import Runtime

from session_graph._base.flow import Flow, Invoke
from session_graph.commit.journal import FAILED, journaled
from session_graph.commit.state import CommitContext, CommitState
from session_graph.memory.prompts import summary_prompt, transcript_chunks
from session_graph.memory.replies import parse_summary

__all__ = ["summarize"]


def summarize(state: CommitState, runtime: Runtime[CommitContext]) -> Flow[dict[str, Any]]:
    """The archived messages summarised with the previous archive's overview carried in: one
    model call, or one per chunk of an archive longer than ``max_input_chars``, each chunk
    carrying the running overview; each finished chunk is journaled, so a resume goes on from
    the first chunk not summarised yet."""
    journal, ctx = state.journal, runtime.context
    if "overview" in journal:
        return {}
    messages = list(state.session.full_chat_history[journal["start"] : journal["end"]])
    if ctx.model is None or not messages:
        users = sum(1 for m in messages if m.type == "human")
        overview = f"# Session Summary\n**Overview**: {users} user turns, {len(messages)} messages"
        return journaled(state, ctx, overview=overview, abstract=f"{users} user turns, {len(messages)} messages")
    chunks = transcript_chunks(messages, ctx.max_input_chars)
    done = journal.get("summary_chunks", 0)
    overview = journal.get("partial_overview") if done else (state.session.archives or {}).get("last_overview")
    update: dict[str, Any] = {}
    abstract = ""
    for index in range(done, len(chunks)):
        try:
            reply = yield Invoke(ctx.model, summary_prompt(chunks[index], overview))
            overview, abstract = parse_summary(reply)
        except Exception as error:  # the archive stays pending; the next commit goes on from this chunk
            where = f" (chunk {index + 1} of {len(chunks)})" if len(chunks) > 1 else ""
            return {**update, "errors": [*state.errors, f"summarize{where}: {type(error).__name__}: {error}"], "route": FAILED}
        if index + 1 < len(chunks):
            update = journaled(state, ctx, summary_chunks=index + 1, partial_overview=overview)
            state = replace(state, **update)
    return journaled(state, ctx, overview=overview, abstract=abstract)
