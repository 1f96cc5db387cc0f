"""summarize: the archive's overview (a fixed Markdown skeleton) and its one-line abstract."""

from __future__ import annotations

from typing import Any

from langgraph.runtime import Runtime

from session_graph._flow import Flow, Invoke
from session_graph.commit.journal import FAILED, journaled
from session_graph.commit.state import CommitContext, CommitState
from session_graph.memory.prompts import memory_transcript, summary_prompt
from session_graph.memory.replies import parse_summary

__all__ = ["summarize"]


def summarize(state: CommitState, runtime: Runtime[CommitContext]) -> Flow[dict[str, Any]]:
    """One model call over the archived messages, the previous archive's overview carried in."""
    journal, ctx = state.journal, runtime.context
    if "overview" in journal:
        return {}
    messages = list(state.session.full_chat_history[journal["start"] : journal["end"]])
    if ctx.model is None or not messages:
        users = sum(1 for m in messages if m.type == "human")
        overview = f"# Session Summary\n**Overview**: {users} user turns, {len(messages)} messages"
        return journaled(state, ctx, overview=overview, abstract=f"{users} user turns, {len(messages)} messages")
    previous = (state.session.archives or {}).get("last_overview")
    try:
        reply = yield Invoke(ctx.model, summary_prompt(memory_transcript(messages), previous))
        overview, abstract = parse_summary(reply)
    except Exception as error:  # the archive stays pending; the next commit asks again
        return {"errors": [*state.errors, f"summarize: {type(error).__name__}: {error}"], "route": FAILED}
    return journaled(state, ctx, overview=overview, abstract=abstract)
