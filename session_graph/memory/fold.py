"""Folding several UPDATEs of one item in one batch into one write, when they do not clash.

Two candidates of one commit often update the same item from the same version (two profile
facts: each decision rewrites the profile with its own line changed). Their rewrites are
merged line by line against the text they both started from (a three-way merge, as version
control does): when the lines each changed do not overlap, the item is written once with both
changes and no model is asked again. When they overlap (two values of one fact), nothing is
folded and the later op is decided again on what the first wrote (see the write step).
"""

from __future__ import annotations

from difflib import SequenceMatcher
from itertools import pairwise
from typing import Any

from session_graph.memory.items import clean_terms

__all__ = ["fold_updates", "merge3"]


def _changes(base: list[str], other: list[str]) -> list[tuple[int, int, list[str]]]:
    """(base start, base end, replacement lines) of each change from ``base`` to ``other``."""
    matcher = SequenceMatcher(a=base, b=other, autojunk=False)
    return [(i1, i2, other[j1:j2]) for tag, i1, i2, j1, j2 in matcher.get_opcodes() if tag != "equal"]


def merge3(base: str, ours: str, theirs: str) -> str | None:
    """``base`` with the changes of both ``ours`` and ``theirs``; None when they touch the same lines."""
    lines = base.splitlines()
    changes = sorted([*_changes(lines, ours.splitlines()), *_changes(lines, theirs.splitlines())],
                     key=lambda change: (change[0], change[1]))  # stable: ours before theirs at one place
    for (s1, e1, _), (s2, _e2, _) in pairwise(changes):
        if s2 < e1 or (s1 == s2 and s1 < e1):  # the same lines changed twice
            return None
    out: list[str] = []
    at = 0
    for start, end, replacement in changes:  # two additions at one place: both kept, in order (once if equal)
        out.extend(lines[at:start])
        out.extend(line for line in replacement if not (start == end and line in out[len(out) - len(replacement):]))
        at = end
    out.extend(lines[at:])
    return "\n".join(out)


def fold_updates(plan: list[dict[str, Any]], done: set[int], current: dict[tuple[str, ...], dict[str, Any]]) -> dict[int, int]:
    """Fold UPDATEs of one item decided from the version stored now; returns {folded op: op it went into}
    and rewrites the surviving op's content in ``plan``. ``current`` maps (namespace..., key) to the
    stored value of each item that two or more pending UPDATEs target."""
    groups: dict[tuple[str, ...], list[int]] = {}
    for position, op in enumerate(plan):
        if position not in done and op["op"] == "update" and len(op.get("targets") or []) == 1:
            groups.setdefault((*op["namespace"], op["key"]), []).append(position)
    folded: dict[int, int] = {}
    for place, positions in groups.items():
        stored = current.get(place)
        if len(positions) < 2 or stored is None:
            continue
        version = int(stored.get("version", 1))
        fresh = [p for p in positions if int((plan[p].get("seen") or {}).get(place[-1], -1)) == version]
        if len(fresh) < 2:
            continue
        head, merged = fresh[0], plan[fresh[0]]["content"]
        terms = [plan[head].get("terms")]
        for position in fresh[1:]:
            attempt = merge3(stored.get("content", ""), merged, plan[position]["content"])
            if attempt is None:
                continue  # a clash: decided again after the first lands
            merged = attempt
            folded[position] = head
            terms.insert(0, plan[position].get("terms"))  # the folded ops' retrieval terms go along, newest first
        if any(target == head for target in folded.values()):
            plan[head] = {**plan[head], "content": merged, "terms": clean_terms(terms)}
    return folded
