"""System messages in the view: kept where they are, moved to the front, or merged into one.

A system message appended mid-conversation stays mid-window, where it was said. Some
providers reject that ("multiple non-consecutive system messages"; others accept a single
system message only). ``session.view.system_messages`` picks what the view sends:

- ``"keep"`` (the default): every message where it is;
- ``"front"``: every system message of the view (system prompt, summary or memo, later
  system messages, in that order) moved to the front, before the first other message;
- ``"merge"``: those system messages merged into one at the front, the first one's fields
  kept (id, name, ``additional_kwargs``; its ``response_metadata["session_graph"]["merged"]``
  lists their ids); its content ``joined_content`` of theirs: their texts joined by a blank
  line while every one is a plain string, else their blocks in order, each one unchanged (a
  ``cache_control`` block, an image), a string as a text block.

Only the view changes: the histories keep every message where it was appended.
"""

from __future__ import annotations

from collections.abc import Callable
import copy
import dataclasses
from typing import Any

from langchain_core.messages import BaseMessage, SystemMessage

__all__ = ["SYSTEM_ORDERS", "MergeCache", "arrange_system_messages", "arranged_view", "joined_content", "merge_system_messages"]

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


def joined_content(contents: list[str | list[Any]]) -> str | list[Any]:
    """Messages' contents as one: their texts joined by a blank line when every one is a plain
    string (what a provider that wants a string gets); else a new list of their blocks in order,
    each block unchanged (the same object: its ``cache_control``, an image's data), a plain
    string as a text block. Empty contents are left out."""
    if all(type(content) is str for content in contents):
        return "\n\n".join(content for content in contents if content)  # type: ignore[misc]
    blocks: list[Any] = []
    for content in contents:
        if isinstance(content, str):
            if content:
                blocks.append({"type": "text", "text": content})
        else:
            blocks.extend(content)
    return blocks


def merge_system_messages(systems: list[BaseMessage]) -> BaseMessage:
    """One system message: the first one (its id, name and kwargs), its content all of theirs
    (``joined_content``: a blank line between texts, or their blocks), their ids in its metadata."""
    first = systems[0]
    marks = {**first.response_metadata.get("session_graph", {}), "merged": [m.id for m in systems]}
    return first.model_copy(update={
        "content": joined_content([m.content for m in systems]),
        "response_metadata": {**first.response_metadata, "session_graph": marks},
    })


class MergeCache:
    """The last merge of a view's system messages and its tokens, reused while they are the same.

    A view is built on every turn and its system messages rarely change: the merged message is
    made and counted once per content (the same message objects, the same counter), not on every
    view. ``measure`` counts it without caching it under its id (it shares the first message's
    id, and would push that message's own count out of the ledger's cache). A message whose
    content was replaced or edited in place since (a string set anew, a block given a
    ``cache_control``) is merged again: the key holds each content (a block list as a copy).
    """

    __slots__ = ("_contents", "_key", "_merged", "_systems", "_tokens")

    def __init__(self) -> None:
        self._systems: tuple[BaseMessage, ...] = ()
        self._contents: tuple[Any, ...] = ()
        self._key: object = None
        self._merged: BaseMessage | None = None
        self._tokens = 0

    def merged(self, systems: list[BaseMessage], key: object, measure: Callable[[BaseMessage], int]) -> tuple[BaseMessage, int]:
        """The merge of ``systems`` and its tokens (``key`` names the counter: a new one recounts)."""
        held = self._systems
        if (self._merged is not None and key == self._key and len(held) == len(systems)
                and all(a is b and _same(a.content, c) for a, b, c in zip(held, systems, self._contents, strict=True))):
            return self._merged, self._tokens
        merged = merge_system_messages(systems)
        tokens = measure(merged)
        self._systems, self._key, self._merged, self._tokens = tuple(systems), key, merged, tokens
        self._contents = tuple(m.content if type(m.content) is str else copy.deepcopy(m.content) for m in systems)
        return merged, tokens


def _same(content: Any, held: Any) -> bool:
    """Whether a content is the one merged: the same string (O(1)), or blocks equal to the copy held."""
    return content is held or (type(content) is not str and content == held)


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
