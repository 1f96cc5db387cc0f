"""System messages in the view: kept where they are, moved to the front, or merged into one.

A system message appended mid-conversation stays mid-window, where it was said. Some
providers reject that ("multiple non-consecutive system messages"; others accept a single
system message only). ``session.view.system_messages`` picks what the view sends:

- ``"keep"`` (the default): every message where it is;
- ``"front"``: every system message of the view (system prompt, summary or memo, later
  system messages, in that order) moved to the front, before the first other message;
- ``"merge"``: those system messages merged into one, their texts joined by a blank line,
  at the front (its ``response_metadata["session_graph"]["merged"]`` lists their ids).

Only the view changes: the histories keep every message where it was appended.
"""

from __future__ import annotations

from collections.abc import Callable
import dataclasses
from typing import Any

from langchain_core.messages import BaseMessage, SystemMessage

__all__ = ["SYSTEM_ORDERS", "arrange_system_messages", "arranged_view"]

SYSTEM_ORDERS = ("keep", "front", "merge")


def arrange_system_messages(messages: list[BaseMessage], how: str) -> list[BaseMessage]:
    """``messages`` with their system messages kept, moved to the front, or merged (see the module docstring)."""
    if how == "keep":
        return messages
    systems = [m for m in messages if isinstance(m, SystemMessage)]
    rest = [m for m in messages if not isinstance(m, SystemMessage)]
    if how == "front" or len(systems) < 2:
        return systems + rest
    first = systems[0]
    marks = {**first.response_metadata.get("session_graph", {}), "merged": [m.id for m in systems]}
    merged = first.model_copy(update={
        "content": "\n\n".join(m.text for m in systems if m.text),
        "response_metadata": {**first.response_metadata, "session_graph": marks},
    })
    return [merged, *rest]


def arranged_view(view: Any, how: str, measure: Callable[[BaseMessage], int], fixed: int) -> Any:
    """A ``SessionView`` with its system messages arranged; its tokens recounted (``fixed``:
    what the request spends outside its messages). A merge that would cost more than the
    budget allows falls back to moving them to the front (same messages, same tokens)."""
    messages = view.messages
    if how == "keep" or not any(isinstance(m, SystemMessage) for m in messages[1:]):
        return view
    arranged = arrange_system_messages(messages, how)
    if len(arranged) == len(messages):  # moved, not merged: the same messages cost what the view says
        return dataclasses.replace(view, messages=arranged)
    total = sum(measure(m) for m in arranged) + fixed
    if view.budget and total > view.budget:
        arranged = arrange_system_messages(messages, "front")
        total = view.tokens
    return dataclasses.replace(view, messages=arranged, tokens=total)
