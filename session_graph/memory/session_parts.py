"""``Session``'s OpenViking message API: ``add_message``, ``update_tool_part``, ``parts``, ``used``.

Each is a function whose first parameter is the session, typed by ``PartsSession`` (what they
use of it; nothing here imports the facade), and ``Session`` takes it as its method by name
(``add_message = session_parts.add_message``): the docstring and signature live here, once.
Under them, pure functions of the full history build the messages, and the session appends
them, so every message still goes through ``append_message`` (normalised, measured, indexed once).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol, TypeVar

from langchain_core.messages import AIMessage, BaseMessage, ToolMessage

from session_graph._base.ids import new_id
from session_graph.errors import MessageError
from session_graph.memory.parts import Part, message_parts, parts_to_messages
from session_graph.memory.usage import usage_records
from session_graph.resize.state import SessionState

__all__ = ["PartsSession", "add_message", "part_messages", "parts", "parts_in_history", "tool_result", "update_tool_part", "used"]


class PartsSession(Protocol):
    """What the parts methods use of a ``Session``: its state, its revision and ``append_message``."""

    revision: int

    @property
    def state(self) -> SessionState: ...

    def append_message(self, message: BaseMessage) -> object: ...


SessionT = TypeVar("SessionT", bound=PartsSession)


def add_message(self: PartsSession, role: str, parts: Sequence[Any], *, id: str | None = None) -> BaseMessage:
    """Append a user or assistant message made of parts; returns it (finished tools are appended as ToolMessages).

    Raises:
        MessageError: an unknown role or a malformed part; nothing is appended.
    """
    messages = part_messages(self.state.full_chat_history, role, parts, id=id or f"msg_{new_id()}")
    for message in messages:
        self.append_message(message)
    return messages[0]


def update_tool_part(self: PartsSession, message_id: str, tool_id: str, output: str, status: str = "completed") -> ToolMessage:
    """Record a tool's result: appends one ToolMessage (O(1); nothing already stored is rewritten).

    Raises:
        MessageError: no such message or tool call, a status other than ``completed`` or
            ``error``, the call already has its result, or the conversation has moved on past
            the call (its result would be separated from it).
    """
    result = tool_result(self.state.full_chat_history, message_id, tool_id, output, status)
    self.append_message(result)
    return result


def parts(self: PartsSession, message: BaseMessage) -> list[Part | dict[str, Any]]:
    """The parts of any message; an assistant message's tool parts carry their results from the history."""
    return parts_in_history(self.state.full_chat_history, message)


def used(self: SessionT, contexts: Sequence[str] | None = None, skill: Mapping[str, Any] | None = None) -> SessionT:
    """Record that contexts (URIs) or a skill ``{uri, input, output, success}`` were used; saved with the session.

    Raises:
        MessageError: a bad argument; nothing is recorded.
    """
    state = self.state
    history = state.full_chat_history
    records = usage_records(contexts, skill, history[-1].id if history else None)
    state.usage = (*state.usage, *records)
    self.revision += 1
    return self


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
