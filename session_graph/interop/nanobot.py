"""nanobot's message records: to langchain-core messages and back, losing nothing; and
``get_history`` as nanobot returns it (the replay rules of nanobot 0.1.x, 0.2.x and 0.3.x).

Each record becomes a langchain-core message; what the message cannot say itself (unknown
fields such as ``tools_used``, ``latency_ms``, ``media``, ``_hidden_history``; a ``null``
content; the field order) is kept in ``additional_kwargs["nanobot"]``, so
:func:`nanobot_record` gives the record back exactly. ``reasoning_content`` and
``thinking_blocks`` go to ``additional_kwargs`` under their own names, where langchain's
providers look for them; OpenAI-style tool calls stay in ``additional_kwargs["tool_calls"]``
as written (their ``arguments`` strings untouched) and become the message's parsed
``tool_calls``.

For a session moving off nanobot whose prompts must not change on the day of the move:
``session.get_history(max_messages=n, compat="nanobot")`` gives, message for message, what
that nanobot version's ``Session.get_history(max_messages=n)`` gives for the same records
(checked against golden output of nanobot 0.1.3.post7, 0.2.2 and 0.3.5). The rules, per family:

- 0.1.x: the newest ``n`` records, ``role`` and ``content`` only;
- 0.2.x and 0.3.x: records from the archive watermark on; the newest ``n`` (0.3.x: all when
  ``n <= 0``); start at the first user turn (or the proactive delivery before it); drop tool
  results whose call is cut off; skip ``_command`` records and empty assistant replies; strip
  replay artefacts from assistant text; add ``[image: path]`` for a user's ``media`` and
  attachment notes for ``cli_apps`` (0.2.x also ``mcp_presets``); keep ``tool_calls``,
  ``tool_call_id``, ``name``, ``reasoning_content`` and ``thinking_blocks``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
import copy
import json
import re
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, ToolMessage, convert_to_openai_messages

from session_graph.errors import ConfigurationError, MessageError
from session_graph.messages import role_of, to_message
from session_graph.resize.arrivals import stamps_of

__all__ = ["NANOBOT_FAMILIES", "archive_offset", "nanobot_history", "nanobot_message", "nanobot_record", "session_history"]

NANOBOT_FAMILIES = ("0.1", "0.2", "0.3")
_DEFAULT_MAX = {"0.1": 50, "0.2": 120, "0.3": 0}
_TIME_PREFIX = re.compile(r"^\[Message Time: [^\]]+\]\n?")
_IMAGE_NOTE = re.compile(r"^\[image: (?:/|~)[^\]]+\]\s*$")
_TOOL_ECHO = re.compile(r"^\s*(?:generate_image|message)\([^)]*\)\s*$")
_KEPT = ("tool_calls", "tool_call_id", "name", "reasoning_content", "thinking_blocks")
_PROVIDER_FIELDS = ("reasoning_content", "thinking_blocks")  # additional_kwargs conventions of langchain providers


def archive_offset(header: dict[str, Any], count: int) -> int:
    """``last_archived`` (0.3.x) or ``last_consolidated`` (0.2.x), 0 when absent or out of range (as nanobot)."""
    for name in ("last_archived", "last_consolidated"):
        value = header.get(name)
        if isinstance(value, int) and not isinstance(value, bool):
            return value if 0 <= value <= count else 0
    return 0


def nanobot_message(data: dict[str, Any], where: str) -> BaseMessage:
    """A langchain-core message from one nanobot message record, keeping every field."""
    fields: dict[str, Any] = {name: data[name] for name in ("role", "content", "tool_calls", "tool_call_id", "name")
                              if name in data and data[name] is not None}  # an "id" field is nanobot's, not ours: kept as written
    if not isinstance(fields.get("content", ""), (str, list)):
        fields.pop("content")
    fields.setdefault("content", "")
    if isinstance(fields.get("tool_calls"), list) and not fields["tool_calls"]:
        fields.pop("tool_calls")
    if fields.get("role") != "tool":
        fields.pop("tool_call_id", None)
    elif not isinstance(fields.get("tool_call_id"), str):
        fields["tool_call_id"] = ""  # nanobot replays a result without one; no view pairs it with a call
    try:
        message = to_message(fields, where=where)
    except (MessageError, KeyError, TypeError, ValueError):
        if "tool_calls" not in fields:
            raise
        # a call a model cut off (arguments that are not a JSON object): still a call, so it
        # stays paired with the result nanobot recorded for it, its text kept under
        # "_unparsed_arguments"; the record keeps it as written
        message = to_message({**fields, "tool_calls": _lenient_calls(fields["tool_calls"])}, where=where)
    extras: dict[str, Any] = {}
    if isinstance(message, AIMessage) and data.get("tool_calls"):
        extras["tool_calls"] = data["tool_calls"]  # as written: arguments strings stay byte-exact
    for name in _PROVIDER_FIELDS:
        if data.get(name) is not None:
            extras[name] = data[name]
    if extras:
        message.additional_kwargs.update(extras)
    derived = _derived(message)
    kept = {name: value for name, value in data.items() if name not in derived or derived[name] != value}
    message.additional_kwargs["nanobot"] = {"keys": list(data), "fields": kept}
    return message


def _lenient_calls(calls: Any) -> list[dict[str, Any]]:
    out = []
    for call in calls if isinstance(calls, list) else []:
        function = call.get("function") if isinstance(call, dict) and isinstance(call.get("function"), dict) else {}
        arguments = function.get("arguments")
        try:
            args = json.loads(arguments) if isinstance(arguments, str) else arguments
        except ValueError:
            args = None
        if not isinstance(args, dict):
            args = {"_unparsed_arguments": arguments if isinstance(arguments, str) else json.dumps(arguments)}
        out.append({"id": str(call.get("id") or "") if isinstance(call, dict) else "", "name": str(function.get("name") or ""),
                    "args": args})
    return out


def _derived(message: BaseMessage) -> dict[str, Any]:
    """The record fields a message states itself."""
    extras = message.additional_kwargs
    derived: dict[str, Any] = {"role": role_of(message), "content": message.content, "id": message.id}
    if isinstance(message, AIMessage) and (extras.get("tool_calls") or message.tool_calls):
        derived["tool_calls"] = extras.get("tool_calls") or convert_to_openai_messages(message)["tool_calls"]
    if isinstance(message, ToolMessage):
        derived["tool_call_id"] = message.tool_call_id
    if message.name is not None:
        derived["name"] = message.name
    for name in _PROVIDER_FIELDS:
        if extras.get(name) is not None:
            derived[name] = extras[name]
    return derived


def nanobot_record(message: BaseMessage, timestamp: str) -> dict[str, Any]:
    """The nanobot record of a message: the one it was read from, exactly, or a new one in
    nanobot's shape (``role``, ``content``, ``timestamp``, then the tool and reasoning fields)."""
    derived = _derived(message)
    kept = message.additional_kwargs.get("nanobot")
    if isinstance(kept, dict) and isinstance(kept.get("keys"), list):
        stored = kept.get("fields") or {}
        return {name: stored[name] if name in stored else derived.get(name) for name in kept["keys"]}
    record = {"role": derived["role"], "content": derived["content"], "timestamp": timestamp}
    record.update({name: derived[name] for name in ("tool_calls", "tool_call_id", "name", *_PROVIDER_FIELDS) if name in derived})
    return record


# -- get_history ----------------------------------------------------------------------------


def session_history(
    messages: Sequence[BaseMessage], stamps: Mapping[str, str], meta: Mapping[str, Any], max_messages: int | None, compat: str,
) -> list[dict[str, Any]]:
    """``Session.get_history(max_messages, compat=...)``: what nanobot returns for a session's messages.

    Only the records the answer can come from are rebuilt: from the archive watermark on, and
    of those the newest ``max_messages`` (all for 0.3.x's ``0``), so a call costs the slice,
    not the history.

    Args:
        messages: the session's full history.
        stamps: arrival times by message id (the timestamp of a message nanobot never saw).
        meta: ``session.metadata["nanobot"]`` (version and header) or empty.
        max_messages: nanobot's argument; None for the version's default.
        compat: ``"nanobot"`` (the version the session came from, else 0.3.x) or ``"nanobot-0.1"|"-0.2"|"-0.3"``.
    """
    family = compat.removeprefix("nanobot").removeprefix("-") or meta.get("version", "0.3")
    if not compat.startswith("nanobot") or family not in NANOBOT_FAMILIES:
        raise ConfigurationError(f"compat must be 'nanobot' or one of 'nanobot-0.1', 'nanobot-0.2', 'nanobot-0.3'; got {compat!r}.")
    if max_messages is not None and (isinstance(max_messages, bool) or not isinstance(max_messages, int)):
        raise ConfigurationError(f"max_messages must be a whole number or None, got {max_messages!r}.")
    limit = _DEFAULT_MAX[family] if max_messages is None else max_messages
    if family == "0.2" and limit <= 0:
        limit = 120
    start = 0 if family == "0.1" else archive_offset(meta.get("header") or {}, len(messages))  # 0.1.x has no watermark
    if limit > 0:
        start = max(start, len(messages) - limit)
    tail = messages[start:]
    records = [nanobot_record(message, stamp) for message, stamp in zip(tail, stamps_of(stamps, tail, ""), strict=True)]
    return nanobot_history(records, limit, family)


def nanobot_history(records: list[dict[str, Any]], limit: int, family: str) -> list[dict[str, Any]]:
    """What nanobot ``family``'s ``get_history(limit)`` returns for records from the watermark on."""
    if family == "0.1":
        recent = records[-limit:] if len(records) > limit else records
        return [{"role": r["role"], "content": r["content"]} for r in recent]
    sliced = records[max(0, len(records) - limit):] if limit > 0 else records
    for index, record in enumerate(sliced):  # start on a user turn (or the proactive delivery it answers)
        if record.get("role") == "user":
            sliced = sliced[index - 1 if index > 0 and sliced[index - 1].get("_channel_delivery") else index:]
            break
    sliced = sliced[_legal_start(sliced):]
    if family == "0.3":  # 0.3.x rewrites 0.2.x exec calls when it loads a session
        sliced = [_exec_migrated(record) for record in sliced]
    return [entry for record in sliced if (entry := _entry(record, family)) is not None]


def _exec_migrated(record: dict[str, Any]) -> dict[str, Any]:
    """0.3.x's load-time rewrite of 0.2.x's ``write_stdin`` calls (now ``exec_session``, with
    ``chars`` as ``input`` and the wait as ``timeout_ms``): a copy, the stored record untouched."""
    calls = record.get("tool_calls")
    touched = record.get("name") == "write_stdin" or (isinstance(calls, list) and any(
        isinstance(c, dict) and (c.get("function") if isinstance(c.get("function"), dict) else c).get("name")
        in ("write_stdin", "exec_session") for c in calls))
    if not touched:
        return record
    record = copy.deepcopy(record)
    if record.get("name") == "write_stdin":
        record["name"] = "exec_session"
    for call in record.get("tool_calls") or []:
        function = call.get("function") if isinstance(call, dict) and isinstance(call.get("function"), dict) else call
        if not isinstance(function, dict) or function.get("name") not in ("write_stdin", "exec_session"):
            continue
        function["name"] = "exec_session"
        raw = function.get("arguments")
        try:
            arguments = json.loads(raw) if isinstance(raw, str) else raw
        except ValueError:
            continue
        if not isinstance(arguments, dict):
            continue
        changed = "chars" in arguments
        if changed:
            arguments.setdefault("input", arguments["chars"])
            arguments.pop("chars")
        wait = "wait_timeout_ms" if arguments.get("wait_for") or arguments.get("until_exit") else "yield_time_ms"
        if "timeout_ms" not in arguments and wait in arguments:
            arguments["timeout_ms"] = arguments[wait]
        for name in ("yield_time_ms", "wait_timeout_ms", "max_output_chars", "max_output_tokens"):
            if name in arguments:
                arguments.pop(name)
                changed = True
        if changed:
            function["arguments"] = json.dumps(arguments, ensure_ascii=False, separators=(",", ":")) if isinstance(raw, str) else arguments
    return record


def _legal_start(records: list[dict[str, Any]]) -> int:
    """The first index after the last tool result whose call is not in the slice."""
    declared: set[str] = set()
    start = 0
    for index, record in enumerate(records):
        if record.get("role") == "assistant":
            declared.update(str(call["id"]) for call in record.get("tool_calls") or [] if isinstance(call, dict) and call.get("id"))
        elif record.get("role") == "tool":
            call_id = record.get("tool_call_id")
            if call_id and str(call_id) not in declared:
                start = index + 1
                declared.clear()
    return start


def _entry(record: dict[str, Any], family: str) -> dict[str, Any] | None:
    if record.get("_command"):
        return None
    role, content = record.get("role"), record.get("content", "")
    if role == "assistant" and isinstance(content, str):
        content = _TIME_PREFIX.sub("", content, count=1)
        content = "\n".join(line for line in content.splitlines()
                            if not _IMAGE_NOTE.match(line) and not _TOOL_ECHO.match(line)).strip()
    if role == "user" and isinstance(content, str):
        content = _with_notes(content, record, family)
    if (role == "assistant" and isinstance(content, str) and not content.strip()
            and not any(name in record for name in ("tool_calls", "reasoning_content", "thinking_blocks"))):
        return None
    entry = {"role": record["role"], "content": content}
    entry.update({name: record[name] for name in _KEPT if name in record})
    return entry


def _with_notes(content: str, record: dict[str, Any], family: str) -> str:
    media = record.get("media")
    if isinstance(media, list) and media:
        notes = "\n".join(f"[image: {path}]" for path in media if isinstance(path, str) and path)
        if notes or family == "0.2":  # 0.2.x adds the newline even when no path is a string
            content = f"{content}\n{notes}" if content else notes
    blocks = []
    if not (family == "0.3" and isinstance(record.get("_runtime_context"), dict)):  # 0.3.x: the context has them
        blocks.append(_attachments(record.get("cli_apps"), _cli_line))
    if family == "0.2":
        blocks.append(_attachments(record.get("mcp_presets"), _mcp_line))
    for block in blocks:
        if block:
            notes = "\n".join(block)
            content = f"{content}\n{notes}" if content else notes
    return content


def _attachments(items: Any, line: Any) -> list[str]:
    if not isinstance(items, list):
        return []
    return [text for item in items[:8] if isinstance(item, dict) and (text := line(item))]


def _cli_line(item: dict[str, Any]) -> str:
    name = str(item.get("name") or "").strip().lower()
    entry = str(item.get("entry_point") or "unknown").strip() or "unknown"
    return f"[CLI App Attachment: @{name}; tool=run_cli_app; entry_point={entry}; skill=skills/cli-app-{name}/SKILL.md]" if name else ""


def _mcp_line(item: dict[str, Any]) -> str:
    name = str(item.get("name") or "").strip().lower()
    transport = str(item.get("transport") or "mcp").strip() or "mcp"
    return f"[MCP Preset Attachment: @{name}; tool_prefix=mcp_{name}_; transport={transport}]" if name else ""
