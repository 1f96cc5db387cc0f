"""A summary or memo over its budget: one compression request, then compress without the model.

A fold's reply over the reserve gets one request to rewrite it within the budget. A model
that will not compress (it fails, answers nothing shorter, or still over the budget) would be
asked again after every fold, each time re-sent the whole, growing summary. So:

- what it answers is shortened here without it, the way the view shortens it (``context.py``:
  oldest list items and entries, the largest sections cut visibly keeping their newest part),
  and that is what the session stores and feeds the next fold: what the model would have seen;
- what it stores is its room plus the lines about messages the window still shows, at most
  half the room more (``novelty.py``): the view shows those lines once the messages have left;
- the size it refused at is recorded under ``COMPRESSION_REFUSED`` in the session's fold
  records (``SessionState.fold_records``, never shown to the model), and it is not asked again until a reply has grown to twice that size: at most
  one compression request per doubling of the summary. A reply within half its budget clears
  it (a reply just within it is often the last shortening plus a few lines).

Without a model (a user's handler), nothing is asked and the reply is stored whole (the view
shortens it).
"""

from __future__ import annotations

from collections.abc import Callable
import json
import logging
from typing import Any

from langchain_core.messages import SystemMessage

from session_graph._base.exact_json import unstorable
from session_graph._base.flow import Flow
from session_graph.compression.context import (
    MEMO_HEADER,
    SHORTENED_NOTE,
    fit_context,
    memo_json,
    summary_body,
    summary_content,
)
from session_graph.compression.novelty import shown_flags

__all__ = ["COMPRESSION_REFUSED", "compressed", "shorten_memo", "shorten_summary"]

log = logging.getLogger(__name__)

COMPRESSION_REFUSED = "compression_refused"
Measure = Callable[[Any], int]


def _shown_room(lines: list[str], shown: frozenset[str] | None, measure_context: Callable[[Any], int]) -> int:
    """Tokens of the ``lines`` the window shows (``novelty``): stored beyond the room, for the
    view to show when those messages leave the window."""
    if not shown:
        return 0
    flagged = [line for line, flag in zip(lines, shown_flags(lines, shown), strict=True) if flag]
    return measure_context(SystemMessage(content="\n".join(flagged))) if flagged else 0


def _with_shown(room: int, lines: list[str], shown: frozenset[str] | None,
                measure_context: Callable[[Any], int]) -> tuple[int, Callable[[], frozenset[str]] | None]:
    """``(room plus what the window shows of lines, at most half the room more; what to drop first)``.

    A fold is fed what is stored: its prompt stays within its chunk and one and a half
    reserves. When the window shows more than that half room (short messages: a window holds
    hundreds), its lines go first, so the room keeps what left the window; otherwise the
    oldest go first, as in the view, so the newest knowledge stays whole."""
    extra = _shown_room(lines, shown, measure_context)
    first = (lambda: shown) if shown and extra > room // 2 else None
    return room + min(room // 2, extra), first


def shorten_summary(text: str, room: int, measure_context: Callable[[Any], int], shown: frozenset[str] | None = None) -> str:
    """``text`` shortened as the view shortens it, to fit ``room`` tokens with its header, plus
    the lines the window shows (``shown``: its terms; see ``novelty``)."""
    room, first = _with_shown(room, [line for line in text.splitlines() if line.strip()], shown, measure_context)
    fitted = fit_context(SystemMessage(content=summary_content(text)), room, measure_context, first)
    if fitted is None:
        return text
    body = summary_body(fitted.text)
    return body[: -len(SHORTENED_NOTE)] if body.endswith(SHORTENED_NOTE) else body


def shorten_memo(memo: dict[str, Any], room: int, measure_context: Callable[[Any], int],
                 shown: frozenset[str] | None = None) -> dict[str, Any]:
    """``memo`` shortened as the view shortens it, to fit ``room`` tokens with its header, plus
    the entries the window shows (``shown``: its terms; see ``novelty``)."""
    room, first = _with_shown(room, _leaves(memo), shown, measure_context)
    fitted = fit_context(SystemMessage(content=MEMO_HEADER + memo_json(memo)), room, measure_context, first)
    return memo if fitted is None else json.loads(fitted.text[len(MEMO_HEADER) :])


def _leaves(value: Any) -> list[str]:
    """The JSON of a memo's leaf entries: list items and dict entries that hold no list or dict."""
    found: list[str] = []
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, item in items:
        if isinstance(item, (dict, list)):
            found.extend(_leaves(item))
        else:
            found.append(memo_json({key: item}) if isinstance(value, dict) else memo_json(item))
    return found


def compressed(
    value: Any, budget: int, measure: Measure, compress: Any, valid: type, shorten: Callable[[Any], Any], refused: int
) -> Flow[tuple[Any, int]]:
    """``(value to store, refusal record)`` for a fold's reply ``value`` (see the module docstring).

    ``compress`` is a flow factory ``(value, budget, tokens)`` or None; ``shorten`` shortens a
    value to ``budget`` without a model; ``refused`` is the recorded refusal (0: none).
    """
    tokens = measure(value)
    if tokens <= budget:  # within its budget; well within it, the model honours budgets again
        return value, 0 if 2 * tokens <= budget else refused
    if compress is None:
        return value, refused
    if refused and tokens < 2 * refused:  # the model would not compress: not asked until it doubled
        return shorten(value), refused
    try:
        shorter = yield from compress(value, budget, tokens)
    except Exception as error:  # documented fallback: shortened here
        log.warning("compression request failed (%s); shortening the reply without the model", error)
        shorter = None
    if isinstance(shorter, valid) and shorter and unstorable(shorter, "the compressed reply") is None:  # no NaN a save would refuse
        size = measure(shorter)
        if size <= budget:
            return shorter, 0
        if size < tokens:
            value = shorter
    log.warning("the model did not compress within %d tokens; shortened without it, not asked again until it doubles", budget)
    return shorten(value), tokens
