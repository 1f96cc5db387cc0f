"""Whether a memo model's reply keeps the knowledge of the memo it replaces.

A memo fold's reply *is* the new memo: whatever the current memo held and the reply does not is
gone from what the model will ever see again. A model sometimes answers with something that is
not a memo at all (``{"status": "ok"}``, ``{"result": "updated"}``, an echo of the last message
as an object). Taken as the memo, it silently wipes every fact.

So the reply is checked against the memo it was given, by *terms* (the retrieval tokenizer's:
stemmed words, numbers, CJK bigrams, over keys and values alike). What a legitimate rewrite looks
like decides the rule:

- keys renamed, nested or flattened, lists merged into strings: the terms are carried over;
- a fold updates some facts (``"status": "pending"`` -> ``"done"``) and adds others: most terms stay;
- a memo asked to fit its budget drops what matters least: it keeps at least a share of the
  terms in proportion to the room it was given (a compression to a third keeps about a third),
  or it keeps the memo's structure with content in it: half of its keys or more, and some of
  its values' terms (a list of 400 ids compressed into the range ``"0001:0400"`` keeps two
  terms of 400, and is still the memo).

A reply that keeps fewer than ``MIN_KEPT`` of the current memo's terms (scaled by the room it was
given when compressing) drops the memo's knowledge without accounting for it: the library's memo
updater asks once more, then fails the fold (``MemoUpdateError``): the memo stays as it was, the
messages stay in the window, and the fold backs off (``backoff.py``). A compression reply that
drops it is refused and the memo is shortened without the model (``refused.py``). Memos of fewer
than ``MIN_TERMS`` terms are not checked (a tiny memo may be rewritten whole), nor is a user's
memo handler (it is not second-guessed). A user who wants the memo gone clears it through the
session, not through a model's reply.
"""

from __future__ import annotations

import json
from typing import Any

from session_graph.retrieval.tokenize import terms

__all__ = ["MIN_KEPT", "MIN_TERMS", "dropped_reason", "memo_terms"]

MIN_TERMS = 12
"""Distinct terms a memo must hold before a reply that drops them is refused."""
MIN_KEPT = 0.25
"""The least share of the current memo's terms a fold's reply keeps (a compression: scaled by its room)."""


def memo_terms(memo: Any) -> set[str]:
    """The distinct terms of a memo's keys and values."""
    return set(terms(json.dumps(memo, ensure_ascii=False, default=str)))


def _keys(memo: Any, out: set[str]) -> set[str]:
    """The key names of a memo, at every level."""
    if isinstance(memo, dict):
        for key, value in memo.items():
            out.add(str(key))
            _keys(value, out)
    elif isinstance(memo, list):
        for value in memo:
            _keys(value, out)
    return out


def _values(memo: Any) -> set[str]:
    """The distinct terms of a memo's values (not its keys)."""
    if isinstance(memo, dict):
        return set().union(*(_values(value) for value in memo.values())) if memo else set()
    if isinstance(memo, list):
        return set().union(*(_values(value) for value in memo)) if memo else set()
    return set(terms(str(memo))) if memo is not None else set()


def _structure_kept(previous: dict[str, Any], reply: Any) -> bool:
    """Whether a compressed ``reply`` keeps half of ``previous``'s keys or more and content in them."""
    keys = _keys(previous, set())
    return 2 * len(keys & _keys(reply, set())) >= len(keys) and len(_values(previous) & _values(reply)) >= 2


def dropped_reason(previous: dict[str, Any], reply: Any, room: float = 1.0) -> str | None:
    """Why ``reply`` drops the knowledge of ``previous`` without accounting for it, or None.

    ``room``: the share of ``previous``'s size the reply was asked to fit in (1.0 for a fold; a
    compression from 900 to 300 tokens: 1/3), which scales the share of terms it must keep.
    """
    held = memo_terms(previous)
    if len(held) < MIN_TERMS:
        return None
    kept = held & memo_terms(reply)
    floor = MIN_KEPT * min(1.0, max(0.0, room))
    if len(kept) >= floor * len(held) or (room < 1.0 and _structure_kept(previous, reply)):
        return None
    shown = json.dumps(reply, ensure_ascii=False, default=str)
    shown = shown if len(shown) <= 120 else shown[:100] + " ... " + shown[-15:]
    return (
        f"the reply keeps {len(kept)} of the {len(held)} terms of the current memo "
        f"({len(kept) / len(held):.0%}; a reply must keep at least {floor:.0%}): {shown}"
    )
