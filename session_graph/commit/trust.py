"""A resumed journal is data, not orders: keep only what this session's own config could produce.

A pending archive's journal travels inside the session document, and a document can be loaded
or imported from anywhere. Replaying its plan as written would let a document name another
user's namespace, a key no candidate gives, or a target nobody was shown, and write there
without the model. So before a pending archive resumes, :func:`trusted_journal` recomputes
what each op may touch from the running ``MemoryConfig`` (the namespace of the candidate's
category for *this* user and agent, the deterministic key of a CREATE, UPDATE/MERGE/SKIP
targets that are stored in that namespace or created by an earlier op of the plan) and:

- drops ``used()`` records that name another owner's memories;
- drops the whole plan (and what it says was applied) when any op does not match, so the
  decide step runs again on this owner's own memories;
- drops the candidates too when one is malformed, so extraction runs again.

Each drop is reported in the returned reasons (the commit logs a warning with them).
"""

from __future__ import annotations

from typing import Any

from langgraph.store.base import BaseStore

from session_graph.memory.categories import CATEGORIES, item_key, memory_namespace, parse_uri

__all__ = ["trusted_journal"]


def _owner_ok(uri: Any, user: str, agent: str, tenant: str | None = None) -> bool:
    place = parse_uri(uri) if isinstance(uri, str) else None
    if place is None:
        return isinstance(uri, str)  # not a memory URI: link_usage ignores it
    namespace, _ = place
    return namespace == memory_namespace(namespace[3], user, agent, tenant)


def _candidate_problem(candidate: Any) -> str | None:
    if not isinstance(candidate, dict) or candidate.get("category") not in CATEGORIES:
        return "a candidate without a known category"
    if not isinstance(candidate.get("content"), str) or not isinstance(candidate.get("abstract", ""), str):
        return "a candidate without text content"
    if candidate.get("key") is not None and not isinstance(candidate.get("key"), str):
        return "a candidate whose key is not a string"
    return None


def _op_problem(position: int, op: Any, candidates: list[dict[str, Any]], earlier: set[str], store: BaseStore,
                user: str, agent: str, tenant: str | None = None) -> str | None:
    if not isinstance(op, dict):
        return f"op {position} is not a mapping"
    index = op.get("index")
    if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < len(candidates):
        return f"op {position} names candidate {index!r}, which does not exist"
    candidate = candidates[index]
    category = candidate["category"]
    if op.get("category") != category:
        return f"op {position} has category {op.get('category')!r} but its candidate is {category!r}"
    namespace = list(memory_namespace(category, user, agent, tenant))
    if op.get("namespace") != namespace:
        return f"op {position} names namespace {op.get('namespace')!r}; this session's own is {namespace!r}"
    kind = op.get("op")
    if kind not in CATEGORIES[category].ops:
        return f"op {position} is {kind!r}, which {category} does not allow"
    if not isinstance(op.get("content"), str):
        return f"op {position} has no text content"
    if kind == "create":
        expected = item_key(category, candidate.get("key"), candidate["content"])
        if op.get("key") != expected or op.get("targets"):
            return f"op {position} creates {op.get('key')!r}; its candidate gives {expected!r}"
        return None
    targets = op.get("targets")
    if not isinstance(targets, list) or not targets or not all(isinstance(t, str) and t for t in targets):
        return f"op {position} ({kind}) has no targets"
    if op.get("key") != targets[0]:
        return f"op {position} writes {op.get('key')!r}, not its first target"
    for target in targets:
        if target not in earlier and store.get(tuple(namespace), target) is None:
            return f"op {position} targets {target!r}, which is neither stored for this owner nor made by an earlier op"
    return None


def trusted_journal(journal: dict[str, Any], store: BaseStore, user: str, agent: str, *,
                    tenant: str | None = None) -> tuple[dict[str, Any], list[str]]:
    """``journal`` with everything this owner's config could not have produced removed, and why.

    Args:
        journal: a pending archive's journal, as loaded.
        store: the memory store the commit writes to (targets must exist there).
        user: the running ``MemoryConfig.user``.
        agent: the running ``MemoryConfig.agent``.
        tenant: the running ``MemoryConfig.tenant``.
    """
    journal = dict(journal)
    reasons: list[str] = []
    usage = journal.get("usage")
    if isinstance(usage, list):
        kept = [r for r in usage if isinstance(r, dict) and _owner_ok(r.get("uri"), user, agent, tenant)]
        if len(kept) != len(usage):
            reasons.append(f"dropped {len(usage) - len(kept)} used() record(s) naming another owner's memories")
            journal["usage"] = kept
    else:
        journal["usage"] = []
    candidates = journal.get("candidates")
    if candidates is not None:
        problem = "candidates is not a list" if not isinstance(candidates, list) else next(
            (p for p in map(_candidate_problem, candidates) if p), None)
        if problem is not None:
            reasons.append(f"dropped the extracted candidates ({problem}); extraction runs again")
            for name in ("candidates", "plan", "applied"):
                journal.pop(name, None)
            return journal, reasons
    plan = journal.get("plan")
    if plan is not None:
        problem = "the plan is not a list" if not isinstance(plan, list) or candidates is None else None
        earlier: set[str] = set()
        for position, op in enumerate(plan if problem is None else []):
            problem = _op_problem(position, op, candidates, earlier, store, user, agent, tenant)  # type: ignore[arg-type]
            if problem is not None:
                break
            earlier.add(op["key"])
        if problem is not None:
            reasons.append(f"dropped the journaled plan ({problem}); the decide step runs again for this owner")
            journal.pop("plan", None)
            journal.pop("applied", None)
    return journal, reasons
