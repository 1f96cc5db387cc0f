"""What a summary or memo says that the window already shows: shortened first, counted last.

When the summary or memo is over its room (a model that ignores its budget), something must
go. Its lines about messages still in the window tell the model nothing the window does not
(the fold folds what waits, so its newest lines are about messages the window still holds);
its older lines are the only trace of what left. So, measured by *distinctive* terms:

- a line (a summary's list item, a memo's list item or entry) is *shown* when every term that
  makes it distinct (a term in at most a quarter of the lines, or two: not ``seen`` or
  ``user`` repeated on every line) occurs in the window's messages; a line with no distinct
  term is never called shown;
- the view drops shown lines before any other (``context.fit_context(..., shown=)``), so its
  room goes to what left the window;
- a reply the model will not compress is stored shortened to its room *plus* its shown lines
  (``refused.shorten_*``): they are what the window still holds now, and what the view needs
  when those messages leave. The next fold is fed that much more, at most half the room.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

from langchain_core.messages import BaseMessage

from session_graph.retrieval.tokenize import terms

__all__ = ["shown_flags", "shown_terms"]


_CACHE: dict[tuple[int, int], frozenset[str]] = {}
_CACHE_SIZE = 4096


def _terms_of(text: str) -> frozenset[str]:
    """``terms(text)`` as a set, cached by the text's hash and length (a view over the same
    window asks again every turn; the text itself is not kept)."""
    key = (hash(text), len(text))
    found = _CACHE.get(key)
    if found is None:
        if len(_CACHE) >= _CACHE_SIZE:
            _CACHE.clear()
        found = _CACHE[key] = frozenset(terms(text))
    return found


def shown_terms(messages: Iterable[BaseMessage]) -> frozenset[str]:
    """The distinct terms of ``messages``' text and tool calls' arguments."""
    found: set[str] = set()
    for message in messages:
        found.update(_terms_of(message.text))
        for call in getattr(message, "tool_calls", None) or []:
            found.update(_terms_of(str(call.get("args", ""))))
    return frozenset(found)


def shown_flags(lines: list[str], shown: frozenset[str]) -> list[bool]:
    """For each of ``lines``, whether every distinct term of it is in ``shown`` (see the module)."""
    if not shown or not lines:
        return [False] * len(lines)
    line_terms = [_terms_of(line) for line in lines]
    frequency = Counter(term for found in line_terms for term in found)
    common = max(2, len(lines) // 4)
    flags = []
    for found in line_terms:
        distinct = {term for term in found if frequency[term] <= common}
        flags.append(bool(distinct) and distinct <= shown)
    return flags
