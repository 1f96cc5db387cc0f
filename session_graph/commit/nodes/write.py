"""write: apply the plan to the memory store, each op once (its reference is recorded on the items).

Several UPDATEs of one item decided from the version stored now are first folded into one
write where their changes do not clash (``memory/fold.py``). Each op is a compare-and-set
under the owner's lock: it lands only if the items its decision
was shown still have the versions it saw (see ``memory/apply.py``). An op whose items moved
meanwhile (an earlier op of this batch on the same item, or another session's commit, in this
process or another) writes nothing; after the pass, those candidates are shown again, with
what is stored now, to the decide model, and the new decisions replace the old in the plan
(journaled first, so a crash resumes with them). A CREATE is also decided again when, looked
up under the lock, it would now be shown a memory another writer made since its decision. Up to ``REDECIDE_ROUNDS`` rounds; still
moving after that: the commit is ``partial`` and the next one goes on from there.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import replace
from typing import Any

from langgraph.runtime import Runtime

from session_graph._base.flow import Flow, Invoke
from session_graph.commit.budget import over_budget, record_reply
from session_graph.commit.journal import journaled
from session_graph.commit.nodes.prefilter import namespaces_of
from session_graph.commit.state import CommitContext, CommitState
from session_graph.errors import ConfigurationError
from session_graph.memory.apply import CONFLICT, apply_op, owner_lock
from session_graph.memory.config import expiry, unavailable
from session_graph.memory.fold import fold_updates
from session_graph.memory.plan import decide_entries, plan_from_decisions, unseen_rivals
from session_graph.memory.prefilter import prefilter as find_hits
from session_graph.memory.prompts import decide_prompt
from session_graph.memory.replies import parse_decisions

__all__ = ["REDECIDE_ROUNDS", "write"]

REDECIDE_ROUNDS = 3


def _rivals(state: CommitState, ctx: CommitContext, op: dict[str, Any], candidate: dict[str, Any]) -> bool:
    """Whether, looked up again now (under the owner's lock), a CREATE would be shown a stored
    memory its decision was not shown and that another writer made: a racing commit stating the
    same fact in other words; then the CREATE is decided again instead of duplicating it."""
    (hits,) = find_hits(ctx.memory.memory_store, [candidate], [tuple(op["namespace"])], top_k=ctx.top_k,
                        embeddings=ctx.memory.embeddings)
    return bool(unseen_rivals(hits, op, f"{state.session.id}/{state.name}#"))


def citation(state: CommitState) -> dict[str, Any]:
    """Where a commit's memories come from: the session, the archive, and the ids of the
    archived messages the user wrote (the first ``MAX_CITED``; all of them when fewer)."""
    journal = state.journal
    messages = state.session.full_chat_history[journal.get("start", 0) : journal.get("end", 0)]
    said = [m.id for m in messages if m.type == "human" and m.id] or [m.id for m in messages if m.id]
    return {"session": state.session.id, "archive": state.name, "message_ids": said[:MAX_CITED]}


MAX_CITED = 20


def _fold(ctx: CommitContext, plan: list[dict[str, Any]], applied: dict[str, Any]) -> bool:
    """Fold UPDATEs of one item decided from the version stored now into one write where their
    changes do not clash (``memory/fold.py``); the folded ops are recorded as applied ``into`` it."""
    done = {int(position) for position in applied}
    counts = Counter((op["category"], op["key"]) for p, op in enumerate(plan) if p not in done and op["op"] == "update")
    current = {}
    for (category, key), count in counts.items():
        if count >= 2:
            namespace = ctx.memory.namespace(category)
            item = ctx.memory.memory_store.get(namespace, key)
            if item is not None:
                current[(*namespace, key)] = item.value
    folded = fold_updates(plan, done, current) if current else {}
    for position, head in folded.items():
        op = plan[position]
        applied[str(position)] = {"result": "folded", "key": op["key"], "category": op["category"],
                                  "targets": list(op.get("targets") or []), "into": head}
    return bool(folded)


def _apply_pass(state: CommitState, ctx: CommitContext, plan: list[dict[str, Any]], applied: dict[str, Any],
                candidates: list[dict[str, Any]]) -> list[int]:
    """Apply every op not applied yet; the positions that conflicted (nothing written for them)."""
    store = ctx.memory.memory_store
    sources = [citation(state)]
    conflicts = []
    for position, op in enumerate(plan):
        if str(position) in applied:
            continue
        op = {**op, "expires_at": expiry(ctx.memory, op["category"], ctx.now)} if op["op"] == "create" else op
        namespace = ctx.memory.namespace(op["category"])  # derived, never read from the journal
        if tuple(op.get("namespace") or ()) != namespace:
            raise ConfigurationError(f"op {position} of the pending plan names {tuple(op.get('namespace') or ())}, but this "
                                   f"commit writes as {namespace} (user {ctx.memory.user!r}, agent {ctx.memory.agent!r}); "
                                   "nothing of it is applied: commit as the owner it was planned for")
        op = {**op, "namespace": list(namespace)}
        with owner_lock(store, (namespace[0], namespace[1])):
            if op["op"] == "create" and position < len(candidates) and _rivals(state, ctx, op, candidates[position]):
                result = CONFLICT
            else:
                result = apply_op(store, op, f"{state.session.id}/{state.name}#{position}", sources, ctx.now, ctx.profile)
        if result == CONFLICT:
            conflicts.append(position)
            for other, entry in list(applied.items()):  # ops folded into this one are decided again with it
                if entry.get("into") == position:
                    del applied[other]
                    conflicts.append(int(other))
            continue
        applied[str(position)] = {"result": result, "key": op["key"], "category": op["category"],
                                  "targets": list(op.get("targets") or [])}
    return conflicts


def write(state: CommitState, runtime: Runtime[CommitContext]) -> Flow[dict[str, Any]]:
    """Apply the ops not applied yet; decide again the ones whose items moved since their decision."""
    journal, ctx = state.journal, runtime.context
    if ctx.dry_run:
        return {}
    plan = [dict(op) for op in journal.get("plan") or []]
    applied = dict(journal.get("applied") or {})
    candidates = journal.get("candidates") or []
    redecided = int(journal.get("redecided") or 0)
    if _fold(ctx, plan, applied):
        state = replace(state, **journaled(state, ctx, plan=[dict(op) for op in plan], applied=dict(applied)))
    for round_ in range(REDECIDE_ROUNDS + 1):
        try:
            conflicts = _apply_pass(state, ctx, plan, applied, candidates)
        except ConfigurationError as error:  # a journaled op of another owner
            update = journaled(state, ctx, applied=dict(applied))
            return {**update, "errors": [*state.errors, f"write: {error}"]}
        except Exception as error:  # the store failed: what landed is journaled; the next commit goes on
            update = journaled(state, ctx, applied=dict(applied))
            clear = unavailable(error)  # a lost connection: say so, and how to make the store reconnect
            reason = f"write: {clear}" if clear is not None else f"write: the memory store failed: {type(error).__name__}: {error}"
            return {**update, "errors": [*state.errors, reason]}
        update = journaled(state, ctx, applied=dict(applied))
        state = replace(state, **update)
        if not conflicts:
            return update
        if ctx.model is None or len(plan) != len(candidates) or round_ >= REDECIDE_ROUNDS:
            break
        namespaces = [list(ns) for ns in namespaces_of(candidates, ctx)]
        fresh = find_hits(ctx.memory.memory_store, [candidates[p] for p in conflicts],
                          [tuple(namespaces[p]) for p in conflicts], top_k=ctx.top_k, embeddings=ctx.memory.embeddings)
        hits: list[dict[str, dict[str, Any]]] = [{} for _c in candidates]
        for position, found in zip(conflicts, fresh, strict=True):  # only what is stored now: the batch is applied
            hits[position] = {ref: hit for ref, hit in found.items() if ref.startswith("m")}
        try:
            entries = decide_entries(candidates, hits)
            if entries:
                prompt = decide_prompt(entries)
                reason = over_budget(ctx, prompt, "write (deciding again)")
                if reason is not None:
                    return {**update, "errors": [*state.errors, reason]}
                reply = yield Invoke(ctx.model, prompt)
                record_reply(ctx, reply)
                decisions = parse_decisions(reply)
            else:
                decisions = []
            again = plan_from_decisions(candidates, namespaces, hits, decisions)
        except Exception as error:
            return {**update, "errors": [*state.errors, f"write (deciding again {len(conflicts)} ops whose memories "
                                         f"changed meanwhile): {type(error).__name__}: {error}"]}
        for position in conflicts:
            plan[position] = again[position]
        redecided += len(conflicts)
        state = replace(state, **journaled(state, ctx, plan=[dict(op) for op in plan], redecided=redecided))
    return {"errors": [*state.errors, f"write: {len(conflicts)} ops found their memories changed by other writers "
                       f"{REDECIDE_ROUNDS} times in a row (or there is no model to decide again); the next commit "
                       "retries them"], "journal": state.journal, "session": state.session}
