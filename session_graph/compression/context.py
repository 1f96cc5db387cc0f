"""The context message: the summary (summary mode) or the memo (memo mode) as a model sees it.

The session stores the model's summary or memo (shortened without the model only when it
would not compress, see ``compression``). The view shows it as one system
message within its reserve; when it is over (a model that ignored the budget it was given,
and then the request to compress), it is shortened here, for the view only, so that it shows
the most knowledge its room can hold, never an empty shell:

- a summary loses the oldest items of its longest lists first (each section keeps its newest
  item); then its largest sections are cut to a fair share of the room, visibly (``[...]``),
  keeping their heading and newest part; only when there are too many sections to show each
  do the oldest go (never the newest); a plain prose summary keeps its newest part;
- a memo loses the oldest entries of its largest nested lists and dicts first (a dict entry
  is an item; each keeps one), then its longest strings are cut keeping their newest part,
  then its oldest keys go (never the newest); it is always valid JSON.

Given the terms the window shows (``shown``), lines and entries about messages the window
still holds go first (``novelty.py``): the room goes to what left the window.

Every shortened copy says so in ``response_metadata["session_graph"]``: ``shortened`` True,
``original_tokens``, and ``shortening``, what was done (items dropped, sections cut by
heading, sections or keys dropped, strings cut, lines shown by the window).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
import copy
import json
import re
from typing import Any

from langchain_core.messages import BaseMessage, SystemMessage

from session_graph.compression.backoff import FOLD_FAILURE
from session_graph.compression.novelty import shown_flags
from session_graph.llm.quote import quote
from session_graph.settings import Limits

__all__ = ["MEMO_HEADER", "SHORTENED_NOTE", "SUMMARY_HEADER", "context_message", "fit_context", "memo_for_model", "memo_json",
           "summary_body", "summary_content"]

SUMMARY_HEADER = "Summary of the earlier conversation (JSON):\n"  # the summary follows as one JSON string (summary_content)
MEMO_HEADER = "Memo of the earlier conversation (JSON):\n"
_ITEM = re.compile(r"^\s*(?:[-*\u2022]|\d+[.)])\s")
_SHORTENED = SHORTENED_NOTE = "\n[... older details left out to fit ...]"
_CUT = "[...] "

Measure = Callable[[BaseMessage], int]
_SESSION_KEYS = frozenset({"last_resize", FOLD_FAILURE, "compression_refused"})  # the last: compression.COMPRESSION_REFUSED


def memo_for_model(memo: dict[str, Any]) -> dict[str, Any]:
    """The memo as a model sees it: without the session's own records (``last_resize``, ``fold_failure``)."""
    return {key: value for key, value in memo.items() if key not in _SESSION_KEYS}


def memo_json(memo: dict[str, Any]) -> str:
    """The memo as the JSON text a model is shown (``llm.quote``: every line separator escaped too)."""
    return quote(memo)


def summary_content(summary: str) -> str:
    """The summary as the model is shown it: the header, then the text as one JSON string
    (``llm.quote``). The summary is a model's rewrite of untrusted messages: shown as written, a
    line of it could read as a header, another message or an instruction of the system message."""
    return SUMMARY_HEADER + quote(summary)


def summary_body(text: str) -> str:
    """The summary a ``summary_content`` text shows (a text after the header that is not one JSON
    string, written as it is by a caller, is returned as it is)."""
    body = text[len(SUMMARY_HEADER) :] if text.startswith(SUMMARY_HEADER) else text
    if body.startswith('"'):
        try:
            decoded = json.loads(body)
        except ValueError:
            return body
        return decoded if isinstance(decoded, str) else body
    return body


def context_message(session_id: str, memo: dict[str, Any], limits: Limits) -> SystemMessage | None:
    """The whole summary or memo as one system message, if the mode has one and it is not empty."""
    if limits.summary_enabled and memo.get("summary"):
        return SystemMessage(content=summary_content(str(memo["summary"])), id=f"{session_id}:summary",
                             response_metadata={"session_graph": {"context": "summary"}})
    shown = memo_for_model(memo)
    if limits.memo_enabled and shown:
        return SystemMessage(content=MEMO_HEADER + memo_json(shown), id=f"{session_id}:memo",
                             response_metadata={"session_graph": {"context": "memo"}})
    return None


def fit_context(message: SystemMessage, room: int, measure: Measure,
                shown: Callable[[], frozenset[str]] | None = None) -> SystemMessage | None:
    """``message`` within ``room`` tokens: as is, shortened by structure, or None if nothing fits.
    ``shown``: the terms the window shows (called only when shortening), whose lines go first."""
    if room <= 0:
        return None
    if measure(message) <= room:
        return message
    text = message.text
    seen = shown() if shown is not None else frozenset()
    if text.startswith(MEMO_HEADER):
        return _fit_memo(message, json.loads(text[len(MEMO_HEADER) :]), room, measure, seen)
    if text.startswith(SUMMARY_HEADER) and (body := summary_body(text)) != text[len(SUMMARY_HEADER) :]:
        return _fit_summary(message, SUMMARY_HEADER, body, room, measure, seen, quote)  # shown quoted: shortened so
    body = text[len(SUMMARY_HEADER) :] if text.startswith(SUMMARY_HEADER) else text
    return _fit_summary(message, text[: len(text) - len(body)], body, room, measure, seen)


def _marked(message: SystemMessage, content: str, original: int, report: dict[str, Any] | None = None) -> SystemMessage:
    marks = {**message.response_metadata.get("session_graph", {}), "shortened": True, "original_tokens": original,
             **({"shortening": dict(report)} if report else {})}
    metadata = {**message.response_metadata, "session_graph": marks}
    return message.model_copy(update={"content": content, "response_metadata": metadata})


def _cut_front(text: str, chars: int) -> str:
    """``text`` less about ``chars`` of its oldest (first) characters, at a word, marked ``[...]``;
    an item keeps its bullet."""
    bullet = _ITEM.match(text)
    prefix = bullet.group(0) if bullet else ""
    rest = text[len(prefix) :]
    if rest.startswith(_CUT):
        rest = rest[len(_CUT) :]
    cut = min(len(rest), max(1, chars))
    space = rest.find(" ", cut)
    if 0 <= space < cut + 24:
        cut = space + 1
    return prefix + _CUT + rest[cut:]


# -- summaries -------------------------------------------------------------------------------
Section = tuple[list[str], list[list[str]]]


def _sections(text: str) -> list[Section]:
    """Sections of a summary: (heading lines, items), an item being its lines."""
    sections: list[Section] = []
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


def _render(sections: list[Section]) -> str:
    return "\n".join(line for heading, items in sections for line in [*heading, *(x for item in items for x in item)])


def _size(section: Section) -> int:
    heading, items = section
    return sum(len(x) + 1 for x in [*heading, *(x for item in items for x in item)])


def _label(section: Section) -> str:
    heading, items = section
    first = next((line for line in heading if line.strip()), None) or (items[0][0] if items and items[0] else "")
    return first.strip().replace(_CUT, "", 1)[:40]


def _cut_section(section: Section, chars: int) -> int:
    """Cut about ``chars`` from the oldest part of a section, keeping its heading and newest
    part (its first item's front, or a prose section's front); returns the characters removed."""
    heading, items = section
    before = _size(section)
    if items:
        if len(items) > 1 and sum(len(x) + 1 for x in items[0]) <= chars:
            items.pop(0)
        else:
            items[0][:] = _cut_front("\n".join(items[0]), chars).split("\n")
    if not items or (_size(section) == before and heading):  # items cut to nothing more: the heading gives (else no progress, ever)
        heading[:] = _cut_front("\n".join(heading), chars).split("\n")
    return before - _size(section)


_FLOOR = 120  # characters a cut section keeps at least, before older sections give way


class _Want:
    """The characters a shortening still wants removed before it measures again."""

    left: float = 0.0

    def __call__(self) -> int:
        return max(1, int(self.left))


def _shrink(render: Callable[[], SystemMessage], steps: Iterator[int], room: int, measure: Measure,
            want: _Want | None = None, chars: Callable[[], int] | None = None) -> SystemMessage | None:
    """Take ``steps`` (each drops something and yields the characters it removed) until
    ``render()`` fits ``room``; measures only every few steps, sized by what is still over
    (``want`` tells a step how much that is, so a cut takes no more than it must). ``chars``:
    the size, in the characters the steps count, of what ``render`` shows (default: its text's;
    a quoted text's escapes are not characters a step removes)."""
    current = render()
    tokens = measure(current)
    per_char = tokens / max(1, chars() if chars is not None else len(current.text))
    want = want or _Want()
    while tokens > room:
        need, removed = (tokens - room) / max(per_char, 1e-9), 0
        while removed < need or not removed:
            want.left = need - removed
            step = next(steps, None)
            if step is None:
                return None
            removed += max(step, 1)
        current = render()
        tokens = measure(current)
    return current


def _fit_summary(message: SystemMessage, header: str, body: str, room: int, measure: Measure,
                 shown: frozenset[str] = frozenset(), shown_as: Callable[[str], str] = str) -> SystemMessage | None:
    """The summary shortened: oldest list items, then the largest sections cut to a fair share
    keeping their newest part, then the oldest sections (never the newest), then a visible cut.
    ``shown_as``: how the body is written after the header (``quote`` for the view's message)."""
    original = measure(message)
    sections = _sections(body)
    bare = measure(message.model_copy(update={"content": header}))  # the header's own share, not the body's room
    room_chars = max(1, room - bare) * max(1, len(body)) / max(1, original - bare)  # in the body's own (unquoted) characters
    report: dict[str, Any] = {"items_dropped": 0, "sections_cut": [], "sections_dropped": 0}
    want = _Want()

    def render() -> SystemMessage:
        return _marked(message, header + shown_as(_render(sections) + _SHORTENED), original, report)

    def cut(index: int, chars: int) -> int:
        label = _label(sections[index])
        if label not in report["sections_cut"] and len(report["sections_cut"]) < 8:
            report["sections_cut"].append(label)
        return _cut_section(sections[index], chars)

    def drop_oldest() -> int:
        section = sections.pop(0)
        report["sections_dropped"] += 1
        return _size(section)

    def steps() -> Iterator[int]:
        items = [(section, item) for section in sections for item in section[1]]
        for (section, item), flag in zip(items, shown_flags(["\n".join(item) for _, item in items], shown), strict=True):
            if flag and len(section[1]) > 1:  # what the window shows goes first
                section[1][:] = [other for other in section[1] if other is not item]
                report["shown_dropped"] = report.get("shown_dropped", 0) + 1
                yield sum(len(x) + 1 for x in item)
        sizes = [_size(section) for section in sections]
        while lists := [k for k, (_, items) in enumerate(sections) if len(items) > 1]:  # oldest item of the longest list
            longest = max(lists, key=sizes.__getitem__)
            dropped = sum(len(x) + 1 for x in sections[longest][1].pop(0))
            sizes[longest] -= dropped
            report["items_dropped"] += 1
            yield dropped
        while len(sections) > 1 and len(sections) * _FLOOR > room_chars:  # too many to show each: the oldest go
            yield drop_oldest()
        while True:  # the largest section cut to a fair share of the room, its newest part kept
            sizes = [_size(section) for section in sections]
            share = max(room_chars / len(sections), _FLOOR)
            largest = max(range(len(sections)), key=sizes.__getitem__)
            if sizes[largest] <= share + 32:
                break
            if not (removed := cut(largest, min(max(32, int(sizes[largest] - share) // 2), want() + 8))):
                break  # nothing left to cut there: never spin
            yield removed
        while len(sections) > 1:  # the oldest sections, never the newest one
            yield drop_oldest()
        while _size(sections[0]) > 40 and (removed := cut(0, min(max(16, _size(sections[0]) // 4), want() + 8))):
            yield removed  # the newest section, cut to what fits (until nothing more can be cut)

    size = (lambda: len(header) + len(_render(sections)) + len(_SHORTENED)) if shown_as is not str else None
    fitted = _shrink(render, steps(), room, measure, want, size)
    if fitted is not None:
        return fitted
    rest = _render(sections)  # what is left of the newest section, cut visibly
    low, high = 0, len(rest)
    while low < high:
        middle = (low + high + 1) // 2
        if measure(_marked(message, header + shown_as(rest[len(rest) - middle :] + _SHORTENED), original, report)) <= room:
            low = middle
        else:
            high = middle - 1
    candidate = _marked(message, header + shown_as(rest[len(rest) - low :] + _SHORTENED), original, report)
    return candidate if low and measure(candidate) <= room else None


# -- memos -----------------------------------------------------------------------------------
def _containers(value: Any) -> list[list[Any] | dict[str, Any]]:
    """Every list and dict inside a JSON value (not the value itself), outermost first."""
    found: list[Any] = []
    stack = list(value.values()) if isinstance(value, dict) else list(value) if isinstance(value, list) else []
    while stack:
        item = stack.pop()
        if isinstance(item, list):
            found.append(item)
            stack.extend(item)
        elif isinstance(item, dict):
            found.append(item)
            stack.extend(item.values())
    return found


def _strings(value: Any, parent: Any = None, key: Any = None) -> list[tuple[Any, Any, str]]:
    """(container, key, text) of every string value inside a JSON value."""
    if isinstance(value, str):
        return [(parent, key, value)] if parent is not None else []
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    return [found for k, v in items for found in _strings(v, value, k)]


def _drop_shown(memo: dict[str, Any], shown: frozenset[str], report: dict[str, Any]) -> Iterator[int]:
    """Drop the memo's leaf entries (in nested lists and dicts) that the window shows (``novelty``);
    each container keeps one entry."""
    if not shown:
        return
    entries = [(c, k) for c in _containers(memo) for k in (c if isinstance(c, dict) else range(len(c)))
               if not isinstance(c[k], (dict, list))]
    flags = shown_flags([memo_json(c[k]) if isinstance(c, list) else memo_json({k: c[k]}) for c, k in entries], shown)
    doomed = [(c, k) for (c, k), flag in zip(entries, flags, strict=True) if flag]
    for c, k in reversed(doomed):  # from the end, so list indices stay valid
        if len(c) > 1:
            size = len(memo_json(c[k])) + 2
            del c[k]
            report["shown_dropped"] = report.get("shown_dropped", 0) + 1
            yield size


def _drop_oldest(container: list[Any] | dict[str, Any]) -> int:
    """Drop the oldest entry of a list or dict (an entry is an item); returns its JSON size."""
    if isinstance(container, list):
        return len(memo_json(container.pop(0))) + 2
    key = next(iter(container))
    return len(memo_json({key: container.pop(key)}))


def _fit_memo(message: SystemMessage, memo: dict[str, Any], room: int, measure: Measure,
              shown: frozenset[str] = frozenset()) -> SystemMessage | None:
    """The memo shortened, always valid JSON: the oldest entries of its largest nested lists and
    dicts (each keeps one), then its longest strings cut keeping their newest part, then its
    oldest keys (never the newest), then the newest key's value cut further."""
    original = measure(message)
    memo = copy.deepcopy(memo)
    report: dict[str, Any] = {"items_dropped": 0, "strings_cut": 0, "keys_dropped": 0}

    def render() -> SystemMessage:
        return _marked(message, MEMO_HEADER + memo_json(memo), original, report)

    def cut_strings(floor: int) -> Iterator[int]:
        while strings := [s for s in _strings(memo) if len(s[2]) > floor]:  # longest first, newest half kept
            container, key, text = max(strings, key=lambda s: len(s[2]))
            shorter = _cut_front(text, max(8, (len(text) - len(_CUT)) // 2))
            if len(shorter) >= len(text):
                return
            container[key] = shorter
            report["strings_cut"] += 1
            yield len(text) - len(shorter)

    def steps() -> Iterator[int]:
        yield from _drop_shown(memo, shown, report)
        sizes = {id(c): (c, len(memo_json(c))) for c in _containers(memo)}
        while candidates := [entry for entry in sizes.values() if len(entry[0]) > 1]:  # oldest entry of the largest
            largest, size = max(candidates, key=lambda entry: entry[1])
            dropped = _drop_oldest(largest)
            sizes[id(largest)] = (largest, size - dropped)
            report["items_dropped"] += 1
            yield dropped
        yield from cut_strings(48)
        while len(memo) > 1:  # the oldest keys, never the newest
            key = next(iter(memo))
            report["keys_dropped"] += 1
            yield len(memo_json({key: memo.pop(key)}))
        yield from cut_strings(12)

    return _shrink(render, steps(), room, measure)
