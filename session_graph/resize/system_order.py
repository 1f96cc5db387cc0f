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

__all__ = ["SYSTEM_ORDERS", "MergeCache", "arrange_system_messages", "arranged_view", "merge_system_messages"]

SYSTEM_ORDERS = ("keep", "front", "merge")


def arrange_system_messages(messages: list[BaseMessage], how: str) -> list[BaseMessage]:
    """``messages`` with their system messages kept, moved to the front, or merged (see the module docstring)."""
    if how == "keep":
        return messages
    systems = [m for m in messages if isinstance(m, SystemMessage)]
    rest = [m for m in messages if not isinstance(m, SystemMessage)]
    if how == "front" or len(systems) < 2:
        return systems + rest
    return [merge_system_messages(systems), *rest]


def merge_system_messages(systems: list[BaseMessage]) -> BaseMessage:
    """One system message: the first one, its text the texts of all joined by a blank line (their ids in its metadata)."""
    first = systems[0]
    marks = {**first.response_metadata.get("session_graph", {}), "merged": [m.id for m in systems]}
    return first.model_copy(update={
        "content": "\n\n".join(m.text for m in systems if m.text),
        "response_metadata": {**first.response_metadata, "session_graph": marks},
    })


class MergeCache:
    """The last merge of a view's system messages and its tokens, reused while they are the same.

    A view is built on every turn and its system messages rarely change: the merged message is
    made and counted once per content (the same message objects, the same counter), not on every
    view. ``measure`` counts it without caching it under its id (it shares the first message's
    id, and would push that message's own count out of the ledger's cache).
    """

    __slots__ = ("_key", "_merged", "_systems", "_tokens")

    def __init__(self) -> None:
        self._systems: tuple[BaseMessage, ...] = ()
        self._key: object = None
        self._merged: BaseMessage | None = None
        self._tokens = 0

    def merged(self, systems: list[BaseMessage], key: object, measure: Callable[[BaseMessage], int]) -> tuple[BaseMessage, int]:
        """The merge of ``systems`` and its tokens (``key`` names the counter: a new one recounts)."""
        held = self._systems
        if (self._merged is not None and key == self._key and len(held) == len(systems)
                and all(a is b for a, b in zip(held, systems, strict=True))):
            return self._merged, self._tokens
        merged = merge_system_messages(systems)
        tokens = measure(merged)
        self._systems, self._key, self._merged, self._tokens = tuple(systems), key, merged, tokens
        return merged, tokens


def arranged_view(view: Any, how: str, measure: Callable[[BaseMessage], int], fixed: int,
                  merge: Callable[[list[BaseMessage]], tuple[BaseMessage, int]] | None = None) -> Any:
    """A ``SessionView`` with its system messages arranged; its tokens recounted (``fixed``:
    what the request spends outside its messages). A merge that would cost more than the
    budget allows falls back to moving them to the front (same messages, same tokens).
    ``merge``: the merged message and its tokens for these system messages (a ``MergeCache``'s),
    else it is made and counted here."""
    messages = view.messages
    if how == "keep" or not any(isinstance(m, SystemMessage) for m in messages[1:]):
        return view
    systems = [m for m in messages if isinstance(m, SystemMessage)]
    rest = [m for m in messages if not isinstance(m, SystemMessage)]
    if how == "front" or len(systems) < 2:  # moved, not merged: the same messages cost what the view says
        return dataclasses.replace(view, messages=systems + rest)
    if merge is not None:
        merged, tokens = merge(systems)
    else:
        merged = merge_system_messages(systems)
        tokens = measure(merged)
    total = tokens + sum(measure(m) for m in rest) + fixed
    if view.budget and total > view.budget:
        return dataclasses.replace(view, messages=systems + rest)
    return dataclasses.replace(view, messages=[merged, *rest], tokens=total)
