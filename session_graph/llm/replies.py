"""Model replies as real models write them: the one place that turns a reply into the
structure a prompt wants.

Real models (local ones behind Ollama, llama.cpp or vLLM, hosted ones without JSON mode)
wrap JSON in fences with any tag or none, add a sentence before or after, emit ``<think>``
sections, use single quotes, trailing commas or Python literals, drop a wrapper key, or stop
mid-object at their output cap. This module accepts a reply whenever it holds exactly one
complete JSON object (or several identical ones), read leniently only where that is
unambiguous, and refuses every other reply with a :class:`~session_graph.errors.ModelReplyError`
whose ``reason`` says why (the callers put it into the resize trace or the commit's errors).

Where the model has structured output (``with_structured_output``, which is JSON mode or
``response_format`` on the integrations that have them), :func:`structured` asks through it,
also through ``with_retry()`` / ``with_fallbacks()`` wrappers; :func:`structured_data` reads
such a result and falls back to the reply's text when the structured parse failed.
"""

from __future__ import annotations

from collections.abc import Callable
import json
import re
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage
from langchain_core.runnables import Runnable, RunnableLambda
from langchain_core.runnables.base import RunnableBindingBase
from langchain_core.runnables.fallbacks import RunnableWithFallbacks
from langchain_core.runnables.retry import RunnableRetry
from pydantic import BaseModel

from session_graph.errors import ModelReplyError

__all__ = [
    "cut_reason",
    "json_object",
    "memo_of",
    "reply_text",
    "structured",
    "structured_data",
    "summary_text",
    "wanted_object",
]

_THINK = re.compile(r"<(think|thinking|reasoning)>.*?</\1>", re.DOTALL | re.IGNORECASE)
_OPEN_THINK = re.compile(r"<(think|thinking|reasoning)>.*\Z", re.DOTALL | re.IGNORECASE)
_CLOSE_THINK = re.compile(r"\A.*?</(think|thinking|reasoning)>", re.DOTALL | re.IGNORECASE)
_FENCE = re.compile(r"(```|~~~)[^\n`]*\n?(.*?)\1", re.DOTALL)
_OPEN_FENCE = re.compile(r"(```|~~~)[^\n`]*\n?(.*)\Z", re.DOTALL)
_LITERALS = {"True": "true", "False": "false", "None": "null"}
_CUT = {"length", "max_tokens", "max_output_tokens", "model_length"}


def reply_text(reply: Any) -> str:
    """The text of a model reply (its text content blocks), without ``<think>`` sections.

    An unclosed ``<think>`` (a reply cut while thinking) is removed to the end; a reply that
    starts inside one (the chat template opened it) is removed up to its ``</think>``.
    """
    text = str(reply.text) if isinstance(reply, BaseMessage) else ("" if reply is None else str(reply))
    text = _THINK.sub("", text)
    if _CLOSE_THINK.search(text) and not re.search(r"<(think|thinking|reasoning)>", text, re.IGNORECASE):
        text = _CLOSE_THINK.sub("", text, count=1)
    return _OPEN_THINK.sub("", text).strip()


def cut_reason(reply: Any) -> str | None:
    """Why the provider says the reply was cut (its output cap), or None.

    Reads ``response_metadata`` the way the integrations report it: ``finish_reason``
    (OpenAI, vLLM, llama.cpp server), ``stop_reason`` (Anthropic), ``done_reason`` (Ollama).
    """
    meta = getattr(reply, "response_metadata", None) or {}
    for key in ("finish_reason", "stop_reason", "done_reason"):
        value = meta.get(key)
        if isinstance(value, str) and value.lower() in _CUT:
            return f"the model stopped at its output cap ({key}={value!r}); raise the model's max tokens"
    return None


def _spans(text: str, quotes: str = "\"'") -> tuple[list[str], bool]:
    """The top-level ``{...}`` spans of ``text`` (strings in ``quotes`` respected), and
    whether an object opened and never closed (a cut reply)."""
    spans: list[str] = []
    depth, start, quote, escaped = 0, -1, "", False
    for index, char in enumerate(text):
        if quote:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == quote:
                quote = ""
            continue
        if depth and char in quotes:
            if char == "'" and text[index - 1].isalnum() and text[index + 1 : index + 2].isalpha():
                continue  # an apostrophe in an unquoted word (not JSON anyway): not a string
            quote = char
        elif char == "{":
            if depth == 0:
                start = index
            depth += 1
        elif char == "}" and depth:
            depth -= 1
            if depth == 0:
                spans.append(text[start : index + 1])
    return spans, depth > 0


def _lenient(span: str) -> str:
    """``span`` with single-quoted strings double-quoted, Python's True/False/None as JSON's,
    and trailing commas dropped; text inside double-quoted strings is never touched."""
    out: list[str] = []
    index, size = 0, len(span)
    while index < size:
        char = span[index]
        if char == '"':
            end = index + 1
            while end < size and span[end] != '"':
                end += 2 if span[end] == "\\" else 1
            out.append(span[index : end + 1])
            index = end + 1
        elif char == "'":
            end, chars = index + 1, []
            while end < size and span[end] != "'":
                if span[end] == "\\" and end + 1 < size:
                    chars.append("'" if span[end + 1] == "'" else span[end : end + 2])
                    end += 2
                    continue
                chars.append('\\"' if span[end] == '"' else span[end])
                end += 1
            out.append('"' + "".join(chars) + '"')
            index = end + 1
        elif char == ",":
            rest = span[index + 1 :].lstrip()
            if not rest.startswith(("}", "]")):
                out.append(char)
            index += 1
        elif char.isalpha():
            end = index
            while end < size and (span[end].isalnum() or span[end] == "_"):
                end += 1
            word = span[index:end]
            out.append(_LITERALS.get(word, word))
            index = end
        else:
            out.append(char)
            index += 1
    return "".join(out)


def _load(span: str) -> Any:
    """The JSON value of ``span``, read strictly, then leniently; ``ValueError`` when neither reads it."""
    try:
        return json.loads(span, strict=False)
    except ValueError:
        return json.loads(_lenient(span), strict=False)


def _is_object(span: str) -> bool:
    try:
        return isinstance(_load(span), dict)
    except ValueError:
        return False


def _objects(places: list[str]) -> tuple[list[dict[str, Any]], bool]:
    found: list[dict[str, Any]] = []
    cut = False
    for place in places:
        spans, open_ = _spans(place)
        if open_ and "'" in place:  # an apostrophe read as a quote? balanced without them: not cut
            fallback, still_open = _spans(place, '"')
            outermost = place[place.find("{") : place.rfind("}") + 1]
            if fallback and (fallback[0] == outermost or _is_object(fallback[0])):  # the outermost object closes that way: not cut
                spans, open_ = fallback, still_open
        cut = cut or open_
        for span in spans:
            try:
                value = _load(span)
            except ValueError:
                continue
            if isinstance(value, dict):
                found.append(value)
    return found, cut


def json_object(text: str) -> dict[str, Any]:
    """The one JSON object in a reply's text (fenced with any tag or none, prose around it).

    Raises:
        ModelReplyError: no object, an object cut off, or several different objects.
    """
    if not text.strip():
        raise ModelReplyError("is empty", reason="empty reply")
    fenced = [body for _, body in _FENCE.findall(text)]
    unclosed = _OPEN_FENCE.search(_FENCE.sub("", text))  # a fence never closed: the model stopped
    found, cut = _objects([*fenced, *([unclosed.group(2)] if unclosed else [])])
    if not found and not cut:  # no fence, or fences holding something else: the whole text
        found, cut = _objects([text])
    if cut:
        raise ModelReplyError(
            "stops in the middle of a JSON object (cut by the output cap?)", reason="truncated JSON object"
        )
    if not found:
        raise ModelReplyError("holds no JSON object", reason="no JSON object")
    if any(value != found[0] for value in found[1:]):
        raise ModelReplyError(
            f"holds {len(found)} different JSON objects; it must hold one", reason="several JSON objects"
        )
    return found[0]


def _say(what: str, text: str, error: ModelReplyError) -> ModelReplyError:
    shown = text if len(text) <= 200 else text[:140] + " ... " + text[-55:]
    refused = ModelReplyError(f"the {what} model's reply {error}: {shown!r}", reason=error.reason)
    refused.__cause__ = error.__cause__
    return refused


def wanted_object(reply: Any, what: str, shape: Callable[[dict[str, Any]], Any]) -> Any:
    """``shape(obj)`` for the one JSON object in ``reply``; ``shape`` raises ``ModelReplyError``
    (with a reason) when the object is not of the wanted shape.

    A reply the provider marks as cut (:func:`cut_reason`) is refused unless it still holds one
    complete object of the wanted shape.

    Raises:
        ModelReplyError: the reply holds no usable object; the message names ``what`` and the reason.
    """
    text = reply_text(reply)
    try:
        return shape(json_object(text))
    except ModelReplyError as error:
        cut = cut_reason(reply)
        if cut and error.reason in ("truncated JSON object", "no JSON object", "empty reply"):
            raise ModelReplyError(f"the {what} model's reply was cut: {cut}: {text[-80:]!r}", reason="cut at the output cap") from None
        raise _say(what, text, error) from None


def memo_of(data: dict[str, Any]) -> dict[str, Any]:
    """The memo in a memo reply: ``{"memo": {...}}``, or the bare memo dict (the spec's fallback
    to the raw dict). A ``"memo"`` key that is not an object is refused, never taken as a fact; a
    tool-call shape (``{"name": ..., "arguments": {...}}``, ``"parameters"``, ``"args"``) is
    unwrapped; an empty bare object is refused (an empty memo must be asked for as
    ``{"memo": {}}``: a reply of ``{}`` would wipe every fact)."""
    wrapper = next((k for k in ("arguments", "parameters", "args") if isinstance(data.get(k), dict)), None)
    if wrapper is not None and set(data) <= {"name", "type", "id", wrapper}:
        return memo_of(data[wrapper])
    if not data:
        raise ModelReplyError(
            'must be {"memo": {...}} or the memo object itself; it is an empty object (an empty memo is {"memo": {}})',
            reason="empty object",
        )
    if "memo" in data:
        if isinstance(data["memo"], dict):
            return data["memo"]
        raise ModelReplyError(
            f'must be {{"memo": {{...}}}} or the memo object itself; its "memo" is a {type(data["memo"]).__name__}',
            reason="memo is not an object",
        )
    return data


def summary_text(reply: Any) -> str:
    """The summary in a summary reply: its text without ``<think>`` sections, without a fence
    wrapping the whole reply, or the string of a ``{"summary": "..."}`` object or of a JSON
    string (the summary in escapes, as a quoting prompt showed it: ``llm.quote``). Missing
    sections are no reason to refuse it (the fold stores and shows what the model wrote);
    a reply cut at the output cap still carries what it says and is kept.

    Raises:
        ModelReplyError: the reply has no text.
    """
    text = reply_text(reply)
    whole = re.fullmatch(r"(```|~~~)[^\n`]*\n(.*?)\n?\1", text, re.DOTALL)
    if whole:
        text = whole.group(2).strip()
    quoted = re.fullmatch(r'(?:summary:\s*)?(".*")', text, re.DOTALL | re.IGNORECASE)
    if quoted:  # the summary in escapes, as a prompt showed it (quoted)
        try:
            data = json.loads(quoted.group(1))
        except ValueError:
            data = None
        if isinstance(data, str):
            text = data.strip()
    if text.startswith("{") and text.endswith("}"):
        try:
            data = _load(text)
        except ValueError:
            data = None
        if isinstance(data, dict) and len(data) == 1 and isinstance(next(iter(data.values())), str):
            text = next(iter(data.values())).strip()
    if not text:
        raise ModelReplyError(f"the summary model's reply has no text: {reply!r:.200}", reason="empty reply")
    return text


def structured(model: Runnable, schema: type[BaseModel]) -> Runnable | None:
    """``model`` asking for ``schema`` through its structured output (``include_raw=True``),
    or None where it has none.

    A ``with_retry()`` or ``with_config()`` wrapper wraps the structured model the same way; in
    ``with_fallbacks()`` each model that has structured output uses it, the others answer
    ``{"raw": reply}`` for the text parser. A ``bind(**kwargs)`` is asked as text (its
    arguments would not reach the structured model).
    """
    if isinstance(model, BaseChatModel):
        try:
            return model.with_structured_output(schema, include_raw=True)
        except (NotImplementedError, ValueError, TypeError, ImportError):
            return None
    if isinstance(model, RunnableBindingBase) and (isinstance(model, RunnableRetry) or not model.kwargs):
        inner = structured(model.bound, schema)  # with_retry(), with_config(): the same wrapper around it
        return None if inner is None else model.model_copy(update={"bound": inner})
    if isinstance(model, RunnableWithFallbacks):
        models = [model.runnable, *model.fallbacks]
        asked = [structured(each, schema) for each in models]
        if all(each is None for each in asked):
            return None
        parts = [each if each is not None else (raw | RunnableLambda(_as_raw)) for raw, each in zip(models, asked, strict=True)]
        return model.model_copy(update={"runnable": parts[0], "fallbacks": parts[1:]})
    return None


def _as_raw(reply: Any) -> dict[str, Any]:
    return {"raw": reply, "parsed": None, "parsing_error": None}


def structured_data(result: Any, schema: type[BaseModel]) -> tuple[BaseModel | None, Any]:
    """(the parsed ``schema`` instance or None, the raw reply to parse as text) of a
    :func:`structured` result. A tool call whose arguments did not validate comes back as
    text: its arguments as JSON, for the lenient shapes to judge."""
    if not isinstance(result, dict):
        return None, result
    parsed = result.get("parsed")
    if isinstance(parsed, schema):
        return parsed, None
    if isinstance(parsed, dict):
        try:
            return schema.model_validate(parsed), None
        except ValueError:
            return None, json.dumps(parsed)
    raw = result.get("raw")
    calls = getattr(raw, "tool_calls", None) or []
    if calls and not reply_text(raw):
        return None, json.dumps(calls[0].get("args", {}), default=str)
    return None, raw
