"""Normalise input to langchain-core messages, and read text and parts back out.

Accepted input: any ``BaseMessage``, or an OpenAI-style dict with ``role`` and ``content``
(``tool_calls``, ``tool_call_id``, ``name``, ``id`` and list content included). Unknown
extra keys are kept in ``additional_kwargs``; nothing the caller gave is dropped.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from itertools import count, repeat
import json
import math
from operator import itemgetter
import re
from typing import Any

from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    ChatMessage,
    FunctionMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
    convert_to_messages,
)

from session_graph._base.ids import new_id
from session_graph.errors import MessageError

__all__ = ["MAX_DEPTH", "MessageInput", "check_storable", "content_parts", "part_text", "role_of", "storable", "to_message"]

MAX_DEPTH = 64
"""How deeply a message's content and fields may nest (JSON objects and lists)."""
_SURROGATE = re.compile("[\ud800-\udfff]")
_FIELDS = ("content", "additional_kwargs", "response_metadata", "name", "id", "tool_calls", "tool_call_id", "artifact",
           "usage_metadata", "status")

MessageInput = BaseMessage | Mapping[str, Any]

_ROLES = {
    "user": "user",
    "human": "user",
    "assistant": "assistant",
    "ai": "assistant",
    "system": "system",
    "developer": "system",
    "tool": "tool",
    "function": "function",
}


_TYPE_ROLES: dict[type, str] = {HumanMessage: "user", AIMessage: "assistant", SystemMessage: "system", ToolMessage: "tool",
                                 FunctionMessage: "function"}
"""The role of each exact langchain-core message class (one lookup: ``role_of`` runs several times per append)."""


def role_of(message: BaseMessage) -> str:
    """The OpenAI role name of a message (``user``, ``assistant``, ``system``, ``tool``)."""
    role = _TYPE_ROLES.get(type(message))
    if role is not None:
        return role
    if isinstance(message, HumanMessage):
        return "user"
    if isinstance(message, AIMessage):
        return "assistant"
    if isinstance(message, SystemMessage):
        return "system"
    if isinstance(message, ToolMessage):
        return "tool"
    if isinstance(message, FunctionMessage):
        return "function"
    if isinstance(message, ChatMessage):
        return message.role
    return message.type


def content_parts(message: BaseMessage) -> list[str | dict[str, Any]]:
    """The message content as a list of parts (a plain string becomes one text part)."""
    content = message.content
    if isinstance(content, str):
        return [content] if content else []
    return list(content)


def part_text(part: str | dict[str, Any]) -> str | None:
    """The text of a content part (a string, or a ``{"type": "text", "text": str}`` block); None for any other part."""
    if isinstance(part, str):
        return part
    text = part.get("text") if part.get("type") == "text" else None
    return text if isinstance(text, str) else None


def to_message(value: MessageInput, *, where: str = "message") -> BaseMessage:
    """Turn a message or an OpenAI-style dict into a langchain-core message with an id.

    Args:
        value: a ``BaseMessage`` or a dict with ``role`` and ``content``.
        where: how to name the value in an error (for example ``"messages[3]"``).

    Raises:
        MessageError: unknown role, missing or mistyped content, malformed tool calls.
    """
    if isinstance(value, BaseMessage):
        if type(value.content) is not str:  # a text content needs no check (the common case: no call)
            _check_content(value.content, where)
        return value if value.id else value.model_copy(update={"id": new_id()})
    if not isinstance(value, Mapping):
        raise MessageError(
            f"{where} must be a langchain-core message or a dict with 'role' and 'content', "
            f"got {type(value).__name__}."
        )
    data = dict(value)
    role = data.get("role")
    if not isinstance(role, str) or role.lower() not in _ROLES:
        raise MessageError(
            f"{where} has role {role!r}; use one of {', '.join(sorted(set(_ROLES)))}."
        )
    kind = _ROLES[role.lower()]
    if "content" not in data or data["content"] is None:
        if kind == "assistant" and data.get("tool_calls"):
            data["content"] = ""  # OpenAI allows a tool-calling reply without text
        else:
            raise MessageError(f"{where} ({role}) has no 'content'; give a string or a list of parts.")
    _check_content(data["content"], where)
    if kind == "tool" and not isinstance(data.get("tool_call_id"), str):
        raise MessageError(f"{where} is a tool result without a string 'tool_call_id'.")
    if "tool_calls" in data:
        data["tool_calls"] = _check_tool_calls(data["tool_calls"], where)
    for key in ("name", "id"):
        if data.get(key) is not None and not isinstance(data[key], str):
            raise MessageError(f"{where} has a non-string {key!r}: {data[key]!r}.")
    if not data.get("id"):
        data["id"] = new_id()
    try:
        (message,) = convert_to_messages([data])
    except (ValueError, TypeError) as error:  # pragma: no cover - guarded by the checks above
        raise MessageError(f"{where} could not be converted: {error}") from error
    return message


def _check_content(content: Any, where: str) -> None:
    if isinstance(content, str):
        return
    if not isinstance(content, list):
        raise MessageError(
            f"{where} content must be a string or a list of parts, got {type(content).__name__}."
        )
    for index, part in enumerate(content):
        if isinstance(part, str):
            continue
        if not isinstance(part, Mapping) or not isinstance(part.get("type"), str):
            raise MessageError(
                f"{where} content[{index}] must be a string or a dict with a 'type', got {part!r:.80}."
            )


def _check_tool_calls(tool_calls: Any, where: str) -> list[dict[str, Any]]:
    if not isinstance(tool_calls, list):
        raise MessageError(f"{where} 'tool_calls' must be a list, got {type(tool_calls).__name__}.")
    checked = []
    for index, call in enumerate(tool_calls):
        name = f"{where} tool_calls[{index}]"
        if not isinstance(call, Mapping):
            raise MessageError(f"{name} must be a dict, got {type(call).__name__}.")
        call = dict(call)
        if "function" in call:  # OpenAI wire format: {"id", "type", "function": {name, arguments}}
            function = call["function"]
            if not isinstance(function, Mapping) or not isinstance(function.get("name"), str):
                raise MessageError(f"{name} needs function.name as a string.")
            arguments = function.get("arguments", "{}")
            if isinstance(arguments, str):
                try:
                    json.loads(arguments or "{}")
                except json.JSONDecodeError as error:
                    raise MessageError(
                        f"{name} ({function['name']}) has arguments that are not JSON: {error}."
                    ) from error
            elif not isinstance(arguments, Mapping):
                raise MessageError(f"{name} arguments must be a JSON string or a dict.")
            else:
                call["function"] = {**function, "arguments": json.dumps(arguments)}
        elif not isinstance(call.get("name"), str):
            raise MessageError(f"{name} needs a 'name' (langchain style) or a 'function' (OpenAI style).")
        checked.append(call)
    return checked


def check_storable(message: BaseMessage, where: str = "message") -> BaseMessage:
    """``message`` if every store can save it and give it back unchanged, else a ``MessageError``.

    Refused, with the path of the culprit: a lone surrogate in a string (not valid UTF-8),
    bytes (base64-encode them into a data block), a float that is NaN or infinite, a dict
    key that is not a string, a value JSON cannot hold (a set, a datetime, an object),
    nesting deeper than ``MAX_DEPTH``, an id that is not a string, and a NUL or control character in the id. A NUL
    inside text is fine: stores escape it.
    """
    key = message.id
    if type(key) is not str and key is not None and not isinstance(key, str):  # set after construction: not validated
        raise MessageError(f"{where} has an id that is not a string ({key!r:.80}); use a plain string id.")
    if key is not None and not key.isprintable() and any(ord(ch) < 32 for ch in key):
        raise MessageError(f"{where} has an id with a NUL or control character ({key!r}); use a plain string id.")
    values = message.__dict__  # pydantic keeps the fields here; getattr on a missing one is slow
    fields = _FIELD_GETTERS.get(type(message)) or _field_getter(type(message))
    try:  # the set fields in one C call: nothing to check when each is plain ASCII text (a text message)
        for value in filter(None, fields(values)):
            if type(value) is not str or not value.isascii():
                break
        else:
            return message
    except KeyError:  # a field missing from the instance: the loop below reads each with a default
        pass
    for field in _FIELDS:
        value = values.get(field)
        if not value or (type(value) is str and value.isascii()):  # unset, empty or plain ASCII text: nothing to check
            continue
        _check_value(value, f"{where}.{field}", 0)
    return message


def storable(value: MessageInput) -> BaseMessage:
    """``check_storable(to_message(value))``, one call: what ``Session.append_message`` checks.

    A message of an exact langchain-core class with text content and an id needs nothing from
    ``to_message`` (no copy, no content check), so it goes to ``check_storable`` directly; any
    other value takes the whole path, with the same errors.
    """
    if type(value) in _TYPE_ROLES and type(value.content) is str and value.id:  # type: ignore[union-attr]
        return check_storable(value)  # type: ignore[arg-type]
    return check_storable(to_message(value))


_FIELD_GETTERS: dict[type, Callable[[dict[str, Any]], tuple[Any, ...]]] = {}
"""Per message class, its fields among ``_FIELDS`` read at once (``check_storable``'s first pass)."""


def _field_getter(kind: type) -> Callable[[dict[str, Any]], tuple[Any, ...]]:
    model_fields = getattr(kind, "model_fields", {})
    fields = [field for field in _FIELDS if field in model_fields] or ["content", "id"]
    getter = itemgetter(*fields) if len(fields) > 1 else (lambda values: (values[fields[0]],))
    _FIELD_GETTERS[kind] = getter
    return getter


def _path(path: str, trail: tuple[Any, str | int] | None) -> str:
    """The path of a value ``_check_value`` reached by ``trail`` (its keys, innermost last) from ``path``."""
    keys: list[str | int] = []
    while trail is not None:
        trail, key = trail
        keys.append(key)
    for key in reversed(keys):
        path = f"{path}[{key}]" if type(key) is int else f"{path}.{key}"
    return path


def _check_value(value: Any, path: str, depth: int) -> None:
    # Each entry: a value, the trail of keys that reached it ((parent's trail, key), None at the
    # top) and its depth; the path is written only for an error, not for every container or leaf
    # (a tool call's arguments are mostly short strings). Plain dicts and lists first, no path.
    stack: list[tuple[Any, Any, int]] = [(value, None, depth)]
    while stack:
        item, trail, level = stack.pop()
        kind = type(item)
        if kind is str:
            if item.isascii() or not _SURROGATE.search(item):
                continue
        elif (kind is int and -(2**63) <= item <= 2**64 - 1) or kind is bool or item is None:  # _base/exact_json's range (folded: no look-up)
            continue
        elif (kind is dict or kind is list) and level < MAX_DEPTH:
            if kind is list:
                stack.extend(zip(item, zip(repeat(trail), count()), repeat(level + 1)))
                continue
            for name, child in item.items():
                if type(name) is not str or (not name.isascii() and _SURROGATE.search(name)):
                    break  # refused below, with its path
                if (type(child) is not str or not child.isascii()) and child is not None and type(child) is not bool:
                    stack.append((child, (trail, name), level + 1))  # plain ASCII text, None or a bool: nothing to check
            else:
                continue
        at = _path(path, trail)
        if isinstance(item, str):
            if not item.isascii() and _SURROGATE.search(item):
                raise MessageError(
                    f"{at} holds a lone surrogate ({_SURROGATE.search(item).group()!r}), which is not valid UTF-8 and "  # type: ignore[union-attr]
                    "cannot be stored; decode the text with errors='replace' (or fix its source) before appending."
                )
        elif isinstance(item, bool | int) or item is None:
            if not isinstance(item, bool) and item is not None and not -(2**63) <= item <= 2**64 - 1:
                raise MessageError(f"{at} is an int past 64 bits, which every store reads back as a float; store it as a string.")
            continue
        elif isinstance(item, float):
            if not math.isfinite(item):
                raise MessageError(f"{at} is {item!r}; JSON cannot store NaN or infinity: use None or a string.")
        elif isinstance(item, bytes | bytearray | memoryview):
            raise MessageError(
                f"{at} holds raw bytes; base64-encode them into a data block "
                "(e.g. {'type': 'image', 'base64': ..., 'mime_type': ...}) so every store can keep them."
            )
        elif kind is dict or kind is list or isinstance(item, Mapping | list | tuple):
            if level >= MAX_DEPTH:
                raise MessageError(f"{at} nests deeper than {MAX_DEPTH} levels; flatten it or store it elsewhere.")
            if kind is dict or isinstance(item, Mapping):
                for name, child in item.items():
                    if type(name) is not str and not isinstance(name, str):
                        raise MessageError(f"{at} has a key {name!r} that is not a string; JSON keys must be strings.")
                    if not name.isascii() and _SURROGATE.search(name):  # a key is written as text too
                        raise MessageError(
                            f"{at} has a key {name!r} holding a lone surrogate, which is not valid UTF-8 and cannot be "
                            "stored; decode the text with errors='replace' (or fix its source) before appending."
                        )
                    stack.append((child, (trail, name), level + 1))
            else:
                stack.extend(zip(item, zip(repeat(trail), count()), repeat(level + 1)))
        elif hasattr(item, "model_dump"):  # a pydantic object langchain keeps (usage details...): check its dump
            stack.append((item.model_dump(), trail, level))
        else:
            raise MessageError(f"{at} is a {type(item).__name__}, which JSON cannot store; convert it to a string or a dict.")
