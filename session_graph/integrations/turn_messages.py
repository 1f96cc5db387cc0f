"""The agent state's messages as a step reads them: the current turn, and what a view made (never recorded)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from langchain_core.messages import BaseMessage, HumanMessage

__all__ = ["current_turn", "is_view_artifact"]


def is_view_artifact(message: Any) -> bool:
    """A message a view made, never recorded: ours (the summary or memo message, a synthetic
    tool result) or the summary LangChain's ``SummarizationMiddleware`` puts in the agent's state
    in place of messages the session already holds in full (recorded, it would read as the
    user's)."""
    metadata = getattr(message, "response_metadata", None)  # read once per new message of every step: no default dicts made
    marks = metadata.get("session_graph") if metadata else None
    if marks and (marks.get("context") or marks.get("synthetic")):
        return True
    kwargs = getattr(message, "additional_kwargs", None)
    return bool(kwargs) and kwargs.get("lc_source") == "summarization"


def current_turn(messages: Sequence[BaseMessage]) -> list[BaseMessage]:
    """The messages from the newest user message on (all of them when there is none)."""
    for index in range(len(messages) - 1, -1, -1):
        if isinstance(messages[index], HumanMessage):
            return list(messages[index:])
    return list(messages)
