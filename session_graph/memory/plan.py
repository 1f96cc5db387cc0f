"""From candidates, hits and decisions to a plan: concrete ops on concrete keys.

A plan op is a dict::

    {"index", "op": "create" | "update" | "merge" | "skip", "category", "namespace", "key",
     "targets": [keys], "seen": {key: version}, "abstract", "overview", "content", "terms"}

``seen`` holds the version of every stored item the decision was shown: the write step
applies an op only if its targets still have those versions, and a CREATE only if its key
was empty or shown (compare-and-set); otherwise it decides again (see ``apply.py``).
Candidates are named by their index in the whole batch (the same number in the prompt, the
decision and the plan), hits by refs that are validated against what that candidate was shown.

Validation happens here, before anything is written: a decision for a candidate that does
not exist, naming a ref it was not shown, with an op its category does not allow, an UPDATE
without one target or content, a MERGE with fewer than two targets: each is a
``MemoryReplyError`` naming it, and the step fails as a whole (nothing from that reply is
applied; the commit is ``partial`` and asks again).
"""

from __future__ import annotations

from typing import Any

from session_graph.errors import MemoryReplyError
from session_graph.memory.categories import CATEGORIES, item_key
from session_graph.memory.items import clean_terms
from session_graph.memory.replies import Decision

__all__ = ["create_plan", "decide_entries", "needs_decision", "plan_from_decisions", "unseen_rivals"]


def needs_decision(hits: dict[str, dict[str, Any]]) -> bool:
    """Whether a candidate must be shown to the decide model (it has hits)."""
    return bool(hits)


def decide_entries(candidates: list[dict[str, Any]], hits: list[dict[str, dict[str, Any]]]) -> list[dict[str, Any]]:
    """What the decide prompt shows: each candidate with hits, its allowed ops and its hits by ref."""
    return [{"index": i, "candidate": c, "ops": CATEGORIES[c["category"]].ops, "hits": h}
            for i, (c, h) in enumerate(zip(candidates, hits, strict=True)) if needs_decision(h)]


def _create(index: int, candidate: dict[str, Any], namespace: list[str]) -> dict[str, Any]:
    return {"index": index, "op": "create", "category": candidate["category"], "namespace": list(namespace),
            "key": item_key(candidate["category"], candidate.get("key"), candidate["content"]), "targets": [],
            "seen": {}, "abstract": candidate["abstract"], "overview": candidate.get("overview", ""),
            "content": candidate["content"], "terms": clean_terms(candidate.get("terms"))}


def create_plan(candidates: list[dict[str, Any]], namespaces: list[list[str]]) -> list[dict[str, Any]]:
    """The plan when no candidate has a hit: CREATE each at its deterministic key."""
    return [_create(i, c, ns) for i, (c, ns) in enumerate(zip(candidates, namespaces, strict=True))]


def plan_from_decisions(
    candidates: list[dict[str, Any]], namespaces: list[list[str]], hits: list[dict[str, dict[str, Any]]],
    decisions: list[Decision],
) -> list[dict[str, Any]]:
    """The plan for a batch: decided candidates as decided, the others CREATE.

    Raises:
        MemoryReplyError: a decision is invalid (see the module docstring).
    """
    shown = {e["index"] for e in decide_entries(candidates, hits)}
    by_candidate: dict[int, Decision] = {}
    problems: list[str] = []
    for decision in decisions:
        i = decision.candidate
        if i not in shown:
            problems.append(f"candidate {i} was not shown for a decision")
            continue
        if i in by_candidate:
            problems.append(f"candidate {i} has two decisions")
            continue
        by_candidate[i] = decision
    missing = sorted(shown - set(by_candidate))
    if missing:
        problems.append(f"no decision for candidates {missing}")
    plan: list[dict[str, Any]] = []
    keys: dict[int, str] = {}
    for i, (candidate, namespace, seen_hits) in enumerate(zip(candidates, namespaces, hits, strict=True)):
        decision = by_candidate.get(i)
        op = _create(i, candidate, namespace)
        op["seen"] = {hit["key"]: hit["version"] for ref, hit in seen_hits.items() if ref.startswith("m")}
        if decision is not None and decision.op != "create":
            rule = CATEGORIES[candidate["category"]]
            unknown = [ref for ref in decision.targets if ref not in seen_hits]
            if decision.op not in rule.ops:
                problems.append(f"candidate {i}: {decision.op!r} is not allowed for {rule.name} (allowed: {', '.join(rule.ops)})")
            elif unknown:
                problems.append(f"candidate {i}: targets {unknown} were not shown (shown: {sorted(seen_hits)})")
            elif decision.op in ("update", "skip") and len(decision.targets) != 1:
                problems.append(f"candidate {i}: {decision.op!r} needs exactly one target, got {decision.targets}")
            elif decision.op == "merge" and len(set(decision.targets)) < 2:
                problems.append(f"candidate {i}: 'merge' needs two or more targets, got {decision.targets}")
            elif decision.op in ("update", "merge") and not (decision.content or "").strip():
                problems.append(f"candidate {i}: {decision.op!r} needs the merged 'content'")
            else:
                targets = [_target_key(ref, seen_hits, keys) for ref in dict.fromkeys(decision.targets)]
                op.update(op=decision.op, key=targets[0], targets=targets)
                if decision.op in ("update", "merge"):
                    op.update(content=decision.content, abstract=decision.abstract or candidate["abstract"])
        keys[i] = op["key"]
        plan.append(op)
    if problems:
        raise MemoryReplyError("the decide model's decisions were rejected: " + "; ".join(problems) + ".", step="decide")
    return plan


def _target_key(ref: str, hits: dict[str, dict[str, Any]], keys: dict[int, str]) -> str:
    if ref.startswith("c"):
        return keys[int(ref[1:])]
    return hits[ref]["key"]


def unseen_rivals(hits: dict[str, dict[str, Any]], op: dict[str, Any], mine: str | None = None) -> list[str]:
    """The keys of stored hits (looked up again just before a CREATE lands) that the op's decision
    was not shown and that another writer made (no applied reference starting with ``mine``, the
    prefix of this batch's op references): the CREATE must be decided again."""
    seen = op.get("seen") or {}
    return [hit["key"] for ref, hit in hits.items() if ref.startswith("m") and hit["key"] not in seen
            and not (mine and any(str(r).startswith(mine) for r in hit.get("applied") or ()))]
