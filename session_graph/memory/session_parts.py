"""OpenViking's message API over a history: the messages ``add_message`` appends, the tool result
``update_tool_part`` appends, and the parts ``parts`` reads back.

Pure functions of the full history: ``Session`` delegates to them and appends what they return, so
every message still goes through ``append_message`` (normalised, measured, indexed once).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, ToolMessage

from session_graph.errors import MessageError
from session_graph.memory.parts import Part, message_parts, parts_to_messages

__all__ = ["part_messages", "parts_in_history", "tool_result"]


def part_messages(history: Sequence[BaseMessage], role: str, parts: Sequence[Any], *, id: str) -> list[BaseMessage]:
    """The messages a message made of parts becomes (finished tools as ToolMessages), their ids checked free.

    Raises:
        MessageError: an unknown role, a malformed part, or an id already in the history.
    """
    messages = parts_to_messages(role, parts, id=id)
    taken = {m.id for m in history[-len(messages) - 64 :]}
    for message in messages:
        if message.id in taken:
            raise MessageError(f"message id {message.id!r} is already in the history.")
    return messages


def _tool_call(history: Sequence[BaseMessage], message_id: str, tool_id: str) -> tuple[int, AIMessage, dict[str, Any]]:
    for index in range(len(history) - 1, -1, -1):
        message = history[index]
        if message.id == message_id:
            if not isinstance(message, AIMessage):
                raise MessageError(f"message {message_id!r} is not an assistant message; it has no tool parts.")
            call = next((c for c in message.tool_calls if c.get("id") == tool_id), None)
            if call is None:
                raise MessageError(f"message {message_id!r} has no tool call {tool_id!r} "
                                   f"(it has {[c.get('id') for c in message.tool_calls]}).")
            return index, message, call
    raise MessageError(f"no message {message_id!r} in the history.")


def tool_result(history: Sequence[BaseMessage], message_id: str, tool_id: str, output: str, status: str) -> ToolMessage:
    """The ToolMessage that records a tool's result, checked against the history (see ``Session.update_tool_part``)."""
    if status not in ("completed", "error"):
        raise MessageError(f"update_tool_part takes status 'completed' or 'error', got {status!r} "
                           "(a pending or running tool has no result to record yet).")
    if not isinstance(output, str):
        raise MessageError(f"update_tool_part output must be a string, got {type(output).__name__}.")
    index, message, call = _tool_call(history, message_id, tool_id)
    after = history[index + 1 :]
    calls = {c.get("id") for c in message.tool_calls}
    if any(not (isinstance(m, ToolMessage) and m.tool_call_id in calls) for m in after):
        raise MessageError(f"the conversation moved on after message {message_id!r}; record tool results before the next message.")
    if any(m.tool_call_id == tool_id for m in after):  # type: ignore[attr-defined]
        raise MessageError(f"tool call {tool_id!r} of message {message_id!r} already has its result.")
    return ToolMessage(content=output, tool_call_id=tool_id, name=call.get("name"),
                       status="success" if status == "completed" else "error", id=f"{message_id}:{tool_id}")


def parts_in_history(history: Sequence[BaseMessage], message: BaseMessage) -> list[Part | dict[str, Any]]:
    """The parts of any message; an assistant message's tool parts carry their results from the history."""
    results: dict[str, ToolMessage] = {}
    if isinstance(message, AIMessage) and message.tool_calls:
        start = next((i for i in range(len(history) - 1, -1, -1) if history[i].id == message.id), len(history))
        for later in history[start + 1 :]:
            if not isinstance(later, ToolMessage):
                break
            results[later.tool_call_id] = later
    return message_parts(message, results)
