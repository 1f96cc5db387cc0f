"""OpenViking's message parts <-> langchain-core messages, losslessly.

======================  ==============================================================
part                    langchain-core
======================  ==============================================================
``TextPart``            a ``{"type": "text"}`` block
``ContextPart``         a text block with the abstract as its text and ``uri`` and
                        ``context_type`` in ``extras["session_graph"]`` (the model sees
                        the abstract; ``view()`` strips every ``extras``)
``ToolPart``            an ``AIMessage.tool_calls`` entry, plus a ``ToolMessage`` once it
                        completes (``completed`` -> ``success``, ``error`` -> ``error``)
an unknown part         a ``non_standard`` block holding it whole (never sent)
======================  ==============================================================

What has no place in a message (``created_at``, a tool's ``tool_uri`` and ``skill_uri``, a
pending tool's status, extra line fields, key orders that differ from OpenViking's, a text
part after a tool part) goes in ``response_metadata["session_graph"]["ov"]``, so an
OpenViking line read in and written out again is byte-identical. ``tool_calls`` cannot hold
extra keys (langchain-core drops them), so nothing is kept there.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
import json
from typing import Any, ClassVar, Literal

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage

from session_graph.errors import MessageError

__all__ = [
    "ContextPart",
    "Part",
    "TextPart",
    "ToolPart",
    "dumps_line",
    "has_extras",
    "line_to_messages",
    "message_parts",
    "messages_to_line",
    "parts_to_messages",
    "provider_safe",
    "strip_view",
]

ContextType = Literal["memory", "resource", "skill"]
ToolStatus = Literal["pending", "running", "completed", "error"]
_LINE_KEYS = ["id", "role", "parts", "created_at"]
_TEXT_KEYS = ["type", "text"]
_CONTEXT_KEYS = ["type", "uri", "context_type", "abstract"]
_TOOL_KEYS = ["type", "tool_id", "tool_name", "tool_uri", "skill_uri", "tool_status", "tool_input", "tool_output"]
_RESULT_STATUS = {"completed": "success", "error": "error"}


@dataclass(frozen=True)
class TextPart:
    """Plain text."""

    type: ClassVar[str] = "text"  # the part's kind, as OpenViking names it (so for each part)
    text: str = ""


@dataclass(frozen=True, kw_only=True)
class ContextPart:
    """A reference to a memory, resource or skill the message draws on; the model sees its abstract."""

    type: ClassVar[str] = "context"
    uri: str
    context_type: ContextType = "memory"
    abstract: str = ""


@dataclass(frozen=True, kw_only=True)
class ToolPart:
    """A tool call of an assistant message and, once it ran, its output and status."""

    type: ClassVar[str] = "tool"
    tool_id: str
    tool_name: str
    tool_input: dict[str, Any] | None = None
    tool_output: str = ""
    tool_status: ToolStatus = "pending"
    tool_uri: str = ""
    skill_uri: str = ""
    extra: Mapping[str, Any] = field(default_factory=dict)


Part = TextPart | ContextPart | ToolPart


def _marks(message: BaseMessage) -> dict[str, Any]:
    return dict((message.response_metadata.get("session_graph") or {}).get("ov") or {})


def _check_part(part: Any, where: str, role: str) -> None:
    if isinstance(part, TextPart):
        if not isinstance(part.text, str):
            raise MessageError(f"{where} TextPart.text must be a string, got {type(part.text).__name__}.")
    elif isinstance(part, ContextPart):
        if not isinstance(part.uri, str) or not part.uri:
            raise MessageError(f"{where} ContextPart needs a non-empty uri (memory://..., viking://...), got {part.uri!r}.")
        if part.context_type not in ("memory", "resource", "skill"):
            raise MessageError(f"{where} ContextPart.context_type must be 'memory', 'resource' or 'skill', got {part.context_type!r}.")
        if not isinstance(part.abstract, str):
            raise MessageError(f"{where} ContextPart.abstract must be a string.")
    elif isinstance(part, ToolPart):
        if role != "assistant":
            raise MessageError(f"{where} is a ToolPart in a {role} message; tool calls belong to assistant messages.")
        if not isinstance(part.tool_id, str) or not part.tool_id or not isinstance(part.tool_name, str) or not part.tool_name:
            raise MessageError(f"{where} ToolPart needs a non-empty tool_id and tool_name.")
        if part.tool_input is not None and not isinstance(part.tool_input, Mapping):
            raise MessageError(f"{where} ToolPart.tool_input must be a dict or None, got {type(part.tool_input).__name__}.")
        if part.tool_status not in ("pending", "running", "completed", "error"):
            raise MessageError(f"{where} ToolPart.tool_status must be pending, running, completed or error, got {part.tool_status!r}.")
        if not isinstance(part.tool_output, str):
            raise MessageError(f"{where} ToolPart.tool_output must be a string.")
    elif not (isinstance(part, Mapping) and isinstance(part.get("type"), str)):
        raise MessageError(f"{where} must be a TextPart, ContextPart or ToolPart (or an OpenViking part dict), got {part!r:.80}.")


def parts_to_messages(
    role: str, parts: Sequence[Any], *, id: str, created_at: str | None = None, fields: Mapping[str, Any] | None = None,
) -> list[BaseMessage]:
    """The message for ``parts`` (a HumanMessage or an AIMessage), then one ToolMessage per finished tool.

    Args:
        role: ``"user"`` or ``"assistant"``.
        parts: parts, or OpenViking part dicts.
        id: the message id.
        created_at: when it was created (kept verbatim); now, in UTC, when not given.
        fields: other fields of an OpenViking line, kept in order.

    Raises:
        MessageError: an unknown role, a malformed part, a tool part outside an assistant message.
    """
    if role not in ("user", "assistant"):
        raise MessageError(f"add_message takes role 'user' or 'assistant' (OpenViking has no other), got {role!r}; "
                           "use append_message for system and tool messages.")
    if isinstance(parts, str | bytes) or not isinstance(parts, Sequence):
        raise MessageError(f"parts must be a list of TextPart, ContextPart or ToolPart, got {type(parts).__name__}.")
    seen_tools: set[str] = set()
    for index, part in enumerate(parts):
        _check_part(part, f"parts[{index}]", role)
        if isinstance(part, ToolPart):
            if part.tool_id in seen_tools:
                raise MessageError(f"parts[{index}] repeats tool_id {part.tool_id!r}; each tool call needs its own id.")
            seen_tools.add(part.tool_id)
    parts = [_from_dict(p) if isinstance(p, Mapping) else p for p in parts]
    blocks: list[dict[str, Any]] = []
    calls: list[dict[str, Any]] = []
    tools: dict[str, Any] = {}
    results: list[ToolMessage] = []
    layout = ""
    for part in parts:
        if isinstance(part, ToolPart):
            layout += "o"
            calls.append({"id": part.tool_id, "name": part.tool_name, "args": dict(part.tool_input or {})})
            meta: dict[str, Any] = {k: v for k, v in (("tool_uri", part.tool_uri), ("skill_uri", part.skill_uri)) if v}
            meta.update(part.extra)
            if part.tool_input is None:
                meta["input_none"] = True
            if part.tool_status in _RESULT_STATUS:
                results.append(ToolMessage(content=part.tool_output, tool_call_id=part.tool_id, name=part.tool_name,
                                           status=_RESULT_STATUS[part.tool_status], id=f"{id}:{part.tool_id}"))
            else:
                meta["status"] = part.tool_status
                if part.tool_output:
                    meta["output"] = part.tool_output
            tools[part.tool_id] = meta
        elif isinstance(part, ContextPart):
            layout += "t"
            blocks.append({"type": "text", "text": part.abstract, "extras": {"session_graph": {
                "part": "context", "uri": part.uri, "context_type": part.context_type}}})
        elif isinstance(part, TextPart):
            layout += "t"
            blocks.append({"type": "text", "text": part.text})
        else:  # an OpenViking part of a type this version does not know: kept whole, never sent
            layout += "t"
            blocks.append({"type": "non_standard", "value": {"openviking_part": dict(part)}})
    marks: dict[str, Any] = {"created_at": created_at or datetime.now(UTC).isoformat()}
    if fields:
        marks["fields"] = dict(fields)
    if tools:
        marks["tools"] = tools
    if "o" in layout and "ot" in layout:  # a text part after a tool part: remember the order
        marks["layout"] = layout
    metadata = {"session_graph": {"ov": marks}}
    if role == "user":
        return [HumanMessage(content=blocks, id=id, response_metadata=metadata)]
    return [AIMessage(content=blocks, tool_calls=calls, id=id, response_metadata=metadata), *results]


def _from_dict(part: Mapping[str, Any]) -> Any:
    kind = part.get("type")
    if kind == "text" and list(part) == _TEXT_KEYS:
        return TextPart(str(part.get("text", "")))
    if kind == "context" and list(part) == _CONTEXT_KEYS:
        return ContextPart(uri=part["uri"], context_type=part["context_type"], abstract=part["abstract"])
    if kind == "tool" and list(part) == [k for k in _TOOL_KEYS if k in part] and {"tool_id", "tool_name"} <= set(part):
        return ToolPart(tool_id=part["tool_id"], tool_name=part["tool_name"], tool_input=part.get("tool_input"),
                        tool_output=part.get("tool_output", ""), tool_status=part.get("tool_status", "pending"),
                        tool_uri=part.get("tool_uri", ""), skill_uri=part.get("skill_uri", ""),
                        extra={} if {"tool_uri", "skill_uri"} <= set(part) else {"absent": [k for k in ("tool_uri", "skill_uri") if k not in part]})
    return dict(part)  # unusual key order or fields: kept whole


def message_parts(message: BaseMessage, results: Mapping[str, ToolMessage] | None = None) -> list[Part | dict[str, Any]]:
    """The parts of any message (tool outputs from ``results`` by tool call id, or the message's marks)."""
    results = results or {}
    if isinstance(message, ToolMessage):
        return [ToolPart(tool_id=message.tool_call_id, tool_name=message.name or "", tool_output=_text(message),
                         tool_status="completed" if message.status != "error" else "error")]
    marks = _marks(message)
    content = message.content if isinstance(message.content, list) else ([message.content] if message.content else [])
    flat: list[Part | dict[str, Any]] = []
    for block in content:
        if isinstance(block, str):
            flat.append(TextPart(block))
        elif block.get("type") == "text":
            extra = (block.get("extras") or {}).get("session_graph") or {}
            if extra.get("part") == "context":
                flat.append(ContextPart(uri=extra["uri"], context_type=extra.get("context_type", "memory"), abstract=block["text"]))
            else:
                flat.append(TextPart(block.get("text", "")))
        elif block.get("type") == "non_standard" and "openviking_part" in (block.get("value") or {}):
            flat.append(dict(block["value"]["openviking_part"]))
    tools: list[Part | dict[str, Any]] = []
    for call in getattr(message, "tool_calls", None) or []:
        meta = (marks.get("tools") or {}).get(call["id"], {})
        result = results.get(call["id"])
        if result is not None:
            status, output = ("error" if result.status == "error" else "completed"), _text(result)
        else:
            status, output = meta.get("status", "pending"), meta.get("output", "")
        extra = {k: v for k, v in meta.items() if k not in ("tool_uri", "skill_uri", "input_none", "status", "output")}
        tools.append(ToolPart(tool_id=call["id"], tool_name=call["name"], tool_input=None if meta.get("input_none") else call["args"],
                              tool_output=output, tool_status=status, tool_uri=meta.get("tool_uri", ""),
                              skill_uri=meta.get("skill_uri", ""), extra=extra))
    layout = marks.get("layout")
    if not layout:
        return [*flat, *tools]
    ordered, texts, calls = [], iter(flat), iter(tools)
    for kind in layout:
        ordered.append(next(calls) if kind == "o" else next(texts))
    return ordered


def _text(message: BaseMessage) -> str:
    content = message.content
    if isinstance(content, str):
        return content
    return "".join(b if isinstance(b, str) else str(b.get("text", "")) for b in content
                   if isinstance(b, str) or b.get("type") == "text")


def _part_dict(part: Part | dict[str, Any]) -> dict[str, Any]:
    if isinstance(part, dict):
        return part
    if isinstance(part, TextPart):
        return {"type": "text", "text": part.text}
    if isinstance(part, ContextPart):
        return {"type": "context", "uri": part.uri, "context_type": part.context_type, "abstract": part.abstract}
    absent = set(part.extra.get("absent", ()))
    out: dict[str, Any] = {"type": "tool", "tool_id": part.tool_id, "tool_name": part.tool_name}
    for key, value in (("tool_uri", part.tool_uri), ("skill_uri", part.skill_uri)):
        if key not in absent:
            out[key] = value
    out["tool_status"] = part.tool_status
    if part.tool_input:
        out["tool_input"] = part.tool_input
    if part.tool_output:
        out["tool_output"] = part.tool_output
    return out


def messages_to_line(message: BaseMessage, results: Mapping[str, ToolMessage] | None = None) -> dict[str, Any]:
    """The OpenViking line of a user or assistant message (its tool results from ``results``)."""
    marks = _marks(message)
    line: dict[str, Any] = {"id": message.id, "role": "user" if isinstance(message, HumanMessage) else "assistant",
                            "parts": [_part_dict(p) for p in message_parts(message, results)],
                            "created_at": marks.get("created_at", "")}
    line.update(marks.get("fields") or {})
    return line


def line_to_messages(line: Mapping[str, Any], where: str = "line") -> list[BaseMessage]:
    """The messages of one OpenViking ``messages.jsonl`` line (an assistant line: its AIMessage and tool results)."""
    if not isinstance(line, Mapping) or not isinstance(line.get("id"), str) or not isinstance(line.get("parts"), list):
        raise MessageError(f"{where} is not an OpenViking message line (it needs 'id', 'role' and 'parts').")
    if list(line)[:4] != _LINE_KEYS:
        raise MessageError(f"{where} has its keys in an order this reader does not keep ({list(line)[:4]}); it cannot round-trip.")
    fields = {k: v for k, v in line.items() if k not in _LINE_KEYS}
    return parts_to_messages(str(line.get("role")), line["parts"], id=line["id"], created_at=line.get("created_at"),
                             fields=fields or None)


def has_extras(message: BaseMessage) -> bool:
    """Whether a message has block ``extras`` or ``non_standard`` blocks a provider must not see."""
    content = message.content
    return isinstance(content, list) and any(
        isinstance(b, dict) and ("extras" in b or b.get("type") == "non_standard") for b in content
    )


def provider_safe(messages: Iterable[BaseMessage]) -> list[BaseMessage]:
    """``messages`` with every block's ``extras`` removed and ``non_standard`` blocks dropped (copies where needed)."""
    out = []
    for message in messages:
        content = message.content
        if has_extras(message):
            cleaned = [{k: v for k, v in b.items() if k != "extras"} if isinstance(b, dict) else b
                       for b in content if not (isinstance(b, dict) and b.get("type") == "non_standard")]
            message = message.model_copy(update={"content": cleaned})
        out.append(message)
    return out


def strip_view(view: Any) -> Any:
    """A ``SessionView`` whose messages are ``provider_safe`` (the same object when nothing needed stripping)."""
    from dataclasses import replace

    messages = provider_safe(view.messages)
    return view if all(a is b for a, b in zip(messages, view.messages, strict=True)) else replace(view, messages=messages)


def dumps_line(line: Mapping[str, Any]) -> str:
    """One ``messages.jsonl`` line as OpenViking writes it."""
    return json.dumps(line, ensure_ascii=False)
