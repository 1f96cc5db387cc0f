"""The context message: the summary (summary mode) or the memo (memo mode) as a model sees it.

The session stores the model's whole summary or memo. The view shows it as one system
message within its reserve; when it is over (a model that ignored the budget it was given,
and then the request to compress), it is shortened here, for the view only, by structure:

- a summary loses the oldest items of its longest lists first (each section keeps its newest
  item), then its oldest sections (never the newest one), and only then is cut, visibly;
- a memo loses the oldest items of its longest lists first (each keeps one), then its oldest
  keys (never the newest), then long strings are shortened; it is always valid JSON.

Every shortened copy says so in ``response_metadata["session_graph"]["shortened"]``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
import copy
import json
import re
from typing import Any

from langchain_core.messages import BaseMessage, SystemMessage

from session_graph.settings import Limits

__all__ = ["MEMO_HEADER", "SUMMARY_HEADER", "context_message", "fit_context", "memo_for_model", "memo_json"]

SUMMARY_HEADER = "Summary of the earlier conversation:\n"
MEMO_HEADER = "Memo of the earlier conversation (JSON):\n"
_ITEM = re.compile(r"^\s*(?:[-*\u2022]|\d+[.)])\s")
_SHORTENED = "\n[... older details left out to fit ...]"

Measure = Callable[[BaseMessage], int]


def memo_for_model(memo: dict[str, Any]) -> dict[str, Any]:
    """The memo as a model sees it: without the session's own ``last_resize`` record."""
    return {key: value for key, value in memo.items() if key != "last_resize"}


def memo_json(memo: dict[str, Any]) -> str:
    """The memo as the JSON text a model is shown."""
    return json.dumps(memo, ensure_ascii=False, default=str)


def context_message(session_id: str, memo: dict[str, Any], limits: Limits) -> SystemMessage | None:
    """The whole summary or memo as one system message, if the mode has one and it is not empty."""
    if limits.summary_enabled and memo.get("summary"):
        return SystemMessage(content=SUMMARY_HEADER + str(memo["summary"]), id=f"{session_id}:summary",
                             response_metadata={"session_graph": {"context": "summary"}})
    shown = memo_for_model(memo)
    if limits.memo_enabled and shown:
        return SystemMessage(content=MEMO_HEADER + memo_json(shown), id=f"{session_id}:memo",
                             response_metadata={"session_graph": {"context": "memo"}})
    return None


def fit_context(message: SystemMessage, room: int, measure: Measure) -> SystemMessage | None:
    """``message`` within ``room`` tokens: as is, shortened by structure, or None if nothing fits."""
    if room <= 0:
        return None
    if measure(message) <= room:
        return message
    text = message.text
    if text.startswith(MEMO_HEADER):
        return _fit_memo(message, json.loads(text[len(MEMO_HEADER) :]), room, measure)
    body = text[len(SUMMARY_HEADER) :] if text.startswith(SUMMARY_HEADER) else text
    return _fit_summary(message, text[: len(text) - len(body)], body, room, measure)


def _marked(message: SystemMessage, content: str, original: int) -> SystemMessage:
    marks = {**message.response_metadata.get("session_graph", {}), "shortened": True, "original_tokens": original}
    metadata = {**message.response_metadata, "session_graph": marks}
    return message.model_copy(update={"content": content, "response_metadata": metadata})


# -- summaries -------------------------------------------------------------------------------
def _sections(text: str) -> list[tuple[list[str], list[list[str]]]]:
    """Sections of a summary: (heading lines, items), an item being its lines."""
    sections: list[tuple[list[str], list[list[str]]]] = []
    for line in text.splitlines():
        if _ITEM.match(line):
            if not sections:
                sections.append(([], []))
            sections[-1][1].append([line])
        elif line.startswith((" ", "\t")) and sections and sections[-1][1]:
            sections[-1][1][-1].append(line)  # a continuation of the item above
        elif sections and not sections[-1][1] and not line.strip():
            sections[-1][0].append(line)
        else:
            sections.append(([line], []))
    return sections


def _render(sections: list[tuple[list[str], list[list[str]]]]) -> str:
    return "\n".join(line for heading, items in sections for line in [*heading, *(x for item in items for x in item)])


def _shrink(render: Callable[[], SystemMessage], steps: Iterator[int], room: int, measure: Measure) -> SystemMessage | None:
    """Take ``steps`` (each drops something and yields the characters it removed) until
    ``render()`` fits ``room``; measures only every few steps, sized by what is still over."""
    current = render()
    tokens = measure(current)
    per_char = tokens / max(1, len(current.text))
    while tokens > room:
        need, removed = (tokens - room) / max(per_char, 1e-9), 0
        while removed < need or not removed:
            step = next(steps, None)
            if step is None:
                return None
            removed += max(step, 1)
        current = render()
        tokens = measure(current)
    return current


def _fit_summary(message: SystemMessage, header: str, body: str, room: int, measure: Measure) -> SystemMessage | None:
    original = measure(message)
    sections = _sections(body)

    def render() -> SystemMessage:
        return _marked(message, header + _render(sections) + _SHORTENED, original)

    def steps() -> Iterator[int]:
        sizes = [sum(len(x) + 1 for item in items for x in item) for _, items in sections]
        while lists := [k for k, (_, items) in enumerate(sections) if len(items) > 1]:  # oldest item of the longest list
            longest = max(lists, key=sizes.__getitem__)
            dropped = sum(len(x) + 1 for x in sections[longest][1].pop(0))
            sizes[longest] -= dropped
            yield dropped
        while len(sections) > 1:  # the oldest sections, never the newest one
            heading, items = sections.pop(0)
            yield sum(len(x) + 1 for x in [*heading, *(x for item in items for x in item)])

    fitted = _shrink(render, steps(), room, measure)
    if fitted is not None:
        return fitted
    rest = _render(sections)  # what is left of the newest section, cut visibly
    low, high = 0, len(rest)
    while low < high:
        middle = (low + high + 1) // 2
        if measure(_marked(message, header + rest[:middle] + _SHORTENED, original)) <= room:
            low = middle
        else:
            high = middle - 1
    candidate = _marked(message, header + rest[:low] + _SHORTENED, original)
    return candidate if low and measure(candidate) <= room else None


# -- memos -----------------------------------------------------------------------------------
def _lists(value: Any) -> list[list[Any]]:
    """Every list inside a JSON value, outermost first."""
    found: list[list[Any]] = []
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, list):
            found.append(item)
            stack.extend(item)
        elif isinstance(item, dict):
            stack.extend(item.values())
    return found


def _strings(value: Any, parent: Any = None, key: Any = None) -> list[tuple[Any, Any, str]]:
    """(container, key, text) of every string value inside a JSON value."""
    if isinstance(value, str):
        return [(parent, key, value)] if parent is not None else []
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    return [found for k, v in items for found in _strings(v, value, k)]


def _fit_memo(message: SystemMessage, memo: dict[str, Any], room: int, measure: Measure) -> SystemMessage | None:
    original = measure(message)
    memo = copy.deepcopy(memo)

    def render() -> SystemMessage:
        return _marked(message, MEMO_HEADER + memo_json(memo), original)

    def steps() -> Iterator[int]:
        lists = {id(items): (items, len(memo_json(items))) for items in _lists(memo)}
        while candidates := [entry for entry in lists.values() if len(entry[0]) > 1]:  # oldest item of the longest list
            longest, size = max(candidates, key=lambda entry: entry[1])
            dropped = len(memo_json(longest.pop(0))) + 2
            lists[id(longest)] = (longest, size - dropped)
            yield dropped
        while len(memo) > 1:  # the oldest keys, never the newest
            key = next(iter(memo))
            yield len(memo_json({key: memo.pop(key)}))
        while strings := [s for s in _strings(memo) if len(s[2]) > 16]:  # long strings halved, longest first
            container, key, text = max(strings, key=lambda s: len(s[2]))
            container[key] = text[: len(text) // 2] + "..."
            yield len(text) // 2 - 3

    return _shrink(render, steps(), room, measure)
