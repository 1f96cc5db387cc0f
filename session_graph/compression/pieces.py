"""Fold input bounded for any message: a message larger than a fold's chunk goes in pieces.

``budget.plan_chunks`` keeps whole units together, so a unit larger than a chunk (a 30k-token
tool result) would reach the memo or summary model whole, and a model with a smaller context
fails on it on every resize. ``fold_batches`` splits such a chunk into batches, each under the
chunk size, one model call each: the small messages together, an oversize message's text in
pieces. A piece is a copy of its message (same id, type, name, tool call id) whose text is one
slice, headed ``[part i/n]`` and marked in ``response_metadata["session_graph"]["piece"]``; an
assistant message's tool calls ride on its last piece, its non-text parts on its first. At
most ``MAX_PIECES`` pieces of one message are sent: beyond that its head and tail pieces go,
the middle replaced by a marked note with its size and digest (the full history keeps the
message whole). These copies exist only in the fold's prompt.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
import hashlib
import math
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage

from session_graph.messages import content_parts, part_text

__all__ = ["MAX_PIECES", "completed", "fold_batches", "pieces"]

MAX_PIECES = 16
"""The most pieces of one message a fold sends (head and tail halves beyond it)."""
_FILL = 0.8  # a piece aims at this share of the size, so that measuring it rarely finds it over


def _split(message: BaseMessage) -> tuple[str, list[Any]]:
    """The text of ``message`` and its non-text parts."""
    texts: list[str] = []
    others: list[Any] = []
    for part in content_parts(message):
        text = part_text(part)
        if text is not None:
            texts.append(text)
        else:
            others.append(part)
    return "\n".join(texts), others


def _piece(message: BaseMessage, text: str, index: int, count: int, others: list[Any], last: bool) -> BaseMessage:
    marks = {**message.response_metadata.get("session_graph", {}), "piece": [index, count]}
    content: Any = f"[part {index}/{count}] {text}"
    if others and index == 1:
        content = [*others, {"type": "text", "text": content}]
    update: dict[str, Any] = {"content": content, "response_metadata": {**message.response_metadata, "session_graph": marks}}
    if isinstance(message, AIMessage) and not last:
        update.update(tool_calls=[], invalid_tool_calls=[])
    return message.model_copy(update=update)


def pieces(message: BaseMessage, max_size: int, measure: Callable[[BaseMessage], int]) -> list[BaseMessage]:
    """``message`` as pieces each measuring under ``max_size`` (``[message]`` if it already does)."""
    size = measure(message)
    if not max_size or size <= max_size:
        return [message]
    text, others = _split(message)
    if not text or 2 * measure(_piece(message, "", 1, 2, others, True)) > max_size:
        return [message]  # its bulk is not text (parts reach the model as digests): slicing cannot help
    count = max(2, math.ceil(size / (max_size * _FILL)))  # aim by the message's chars per unit
    step = math.ceil(len(text) / count)
    slices = [text[i : i + step] for i in range(0, len(text), step)]
    for _ in range(8):  # then halve any slice still over
        over = [k for k, s in enumerate(slices) if len(s) > 1 and measure(_piece(message, s, 1, len(slices), [], False)) > max_size]
        if not over:
            break
        for k in reversed(over):
            half = len(slices[k]) // 2
            slices[k : k + 1] = [slices[k][:half], slices[k][half:]]
    if len(slices) > MAX_PIECES:
        head, tail = slices[: MAX_PIECES // 2], slices[len(slices) - MAX_PIECES // 2 :]
        middle = "".join(slices[MAX_PIECES // 2 : len(slices) - MAX_PIECES // 2])
        digest = hashlib.sha256(middle.encode("utf-8", "surrogatepass")).hexdigest()[:16]
        note = f"[... {len(middle):,} characters left out of this fold (sha256 {digest}); the history keeps them ...]"
        tail[0] = note + "\n" + tail[0]
        slices = head + tail
    count = len(slices)
    return [_piece(message, s, k + 1, count, others, k + 1 == count) for k, s in enumerate(slices)]


def completed(batch: Sequence[BaseMessage]) -> int:
    """How many messages a batch completes: whole messages, and last pieces."""
    count = 0
    for message in batch:
        piece = message.response_metadata.get("session_graph", {}).get("piece")
        count += piece is None or piece[0] == piece[1]
    return count


def fold_batches(messages: Sequence[BaseMessage], max_size: int, measure: Callable[[BaseMessage], int]) -> list[list[BaseMessage]]:
    """``messages`` (one planned chunk) as batches for one model call each, each under ``max_size``.

    A chunk under the size is one batch, as it is. Otherwise consecutive small messages share a
    batch and an oversize message goes in pieces, one batch each (see ``pieces``). ``max_size``
    0: one batch.
    """
    if not messages:
        return []
    sizes = [measure(m) for m in messages]
    if not max_size or sum(sizes) <= max_size:
        return [list(messages)]
    batches: list[list[BaseMessage]] = []
    current: list[BaseMessage] = []
    used = 0
    for message, size in zip(messages, sizes, strict=True):
        if size > max_size:
            if current:
                batches.append(current)
                current, used = [], 0
            batches.extend([piece] for piece in pieces(message, max_size, measure))
            continue
        if current and used + size > max_size:
            batches.append(current)
            current, used = [], 0
        current.append(message)
        used += size
    if current:
        batches.append(current)
    return batches
