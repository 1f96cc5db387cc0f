"""A commit's budget of model calls and tokens, and what it spent.

Every model call of a commit (summary and extraction per chunk, the decision, a decision made
again) asks ``spend`` first. Past ``MemoryConfig.max_commit_calls`` calls or
``max_commit_tokens`` prompt tokens the call is not made: the step stops with the reason, the
commit is ``partial``, and since summaries and extractions are journaled per chunk, the next
commit goes on from there with a fresh budget. Tokens are the provider's own counts
(``usage_metadata``) where a reply has them, else estimated at four characters a token.
"""

from __future__ import annotations

from typing import Any

from langchain_core.messages import BaseMessage

from session_graph.commit.state import CommitContext

__all__ = ["over_budget", "record_reply"]


def _estimate(text: str) -> int:
    return (len(text) + 3) // 4


def over_budget(ctx: CommitContext, prompt: list[BaseMessage], step: str) -> str | None:
    """The reason this call would exceed the commit's budget (None: go ahead, counted)."""
    spent = ctx.spent
    tokens = sum(_estimate(str(m.content)) for m in prompt)
    calls_cap, tokens_cap = ctx.memory.max_commit_calls, ctx.memory.max_commit_tokens
    if spent.get("calls", 0) + 1 > calls_cap or spent.get("input_tokens", 0) + tokens > tokens_cap:
        return (f"{step}: this commit's budget is spent ({spent.get('calls', 0)} model calls of {calls_cap}, about "
                f"{spent.get('input_tokens', 0):,} prompt tokens of {tokens_cap:,}; MemoryConfig.max_commit_calls / "
                f"max_commit_tokens); the next commit goes on from here")
    spent["calls"] = spent.get("calls", 0) + 1
    spent["pending_input"] = tokens
    return None


def record_reply(ctx: CommitContext, reply: Any) -> None:
    """Count a reply's tokens (the provider's counts when given, else the estimate)."""
    spent = ctx.spent
    if isinstance(reply, dict) and "raw" in reply:  # structured output asked with include_raw=True
        reply = reply["raw"]
    usage = getattr(reply, "usage_metadata", None) or {}
    estimate = spent.pop("pending_input", 0)
    spent["input_tokens"] = spent.get("input_tokens", 0) + int(usage.get("input_tokens") or estimate)
    text = reply.content if isinstance(getattr(reply, "content", None), str) else str(getattr(reply, "content", reply))
    spent["output_tokens"] = spent.get("output_tokens", 0) + int(usage.get("output_tokens") or _estimate(text))
