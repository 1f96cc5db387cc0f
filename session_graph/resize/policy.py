"""Decisions: the default policy, forced decisions and normalisation of custom results.

The default policy reads the running window totals, never the history, so judging is
O(1) per turn. Its order, highest severity first:

1. window chars >= limit          -> ``{"type": "deep", "reason": "max_messages_text_length", "severity": 100}``
   window + fixed tokens > budget -> ``{"type": "deep", "reason": "max_tokens", "severity": 100}``
2. window messages > limit        -> ``{"type": "lite", "reason": "max_keep_messages_count", "severity": 50}``
3. turns since last resize >= N   -> ``{"type": "lite", "reason": "every_n_turns", "severity": 10}``
4. otherwise None.

A limit only fires when a prune could actually shrink the window (see
``WindowTotals.prunable``), so one message bigger than the limit does not make every later
judge return deep.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any, NotRequired, TypedDict

from session_graph._base.exact_json import unstorable
from session_graph._base.flow import Call, Flow
from session_graph.accounting.budget import window_room
from session_graph.accounting.window import Totals
from session_graph.errors import PolicyResultError
from session_graph.settings import Limits

__all__ = ["Decision", "PolicyHandler", "decide", "default_policy", "forced_decision", "normalize_decision"]


class Decision(TypedDict):
    """What the policy decided: a resize type plus why and how urgent."""

    type: str
    reason: NotRequired[str]
    severity: NotRequired[int]
    meta: NotRequired[dict[str, Any]]


PolicyHandler = Callable[..., "str | Mapping[str, Any] | Awaitable[str | Mapping[str, Any] | None] | None"]


def default_policy(
    totals: Totals, turns: int, last_resize_turn: int, limits: Limits, fixed_tokens: int = 0
) -> Decision | None:
    """The default policy on running totals (see the module docstring).

    ``fixed_tokens`` is what every request spends outside the window (system prompt, the
    summary or memo as held, reply priming); the window's room under a token budget is the rest.
    """
    token_room = window_room(limits.tokens, fixed_tokens)
    over_chars, over_messages, over_tokens = totals.prunable(limits.chars, limits.messages, token_room)
    if over_chars:
        return {"type": "deep", "reason": "max_messages_text_length", "severity": 100}
    if over_tokens:
        return {"type": "deep", "reason": "max_tokens", "severity": 100}
    if over_messages:
        return {"type": "lite", "reason": "max_keep_messages_count", "severity": 50}
    if limits.every_n_turns and turns - last_resize_turn >= limits.every_n_turns:
        return {"type": "lite", "reason": "every_n_turns", "severity": 10}
    return None


def forced_decision(force: Any) -> Decision:
    """``force`` as a decision: a string names the type, any other truthy value means deep."""
    return {"type": force if isinstance(force, str) else "deep", "reason": "force", "severity": 1000}


def normalize_decision(result: Any) -> Decision | None:
    """None, a type string, or a dict with a string ``type`` -> a Decision (or None).

    Raises:
        PolicyResultError: (a ``TypeError``) for anything else.
    """
    if result is None:
        return None
    if isinstance(result, str) and result:
        return {"type": result}
    if isinstance(result, Mapping) and isinstance(result.get("type"), str) and result["type"]:
        why = unstorable(result.get("reason"), "its decision's 'reason'") if "reason" in result else None
        if why is not None:  # it goes into the memo (memo["last_resize"]): every save would be refused
            raise PolicyResultError(f"the policy handler returned {result!r:.120}: {why}")
        return dict(result)  # type: ignore[return-value]
    raise PolicyResultError(
        f"the policy handler returned {result!r:.120}; return None, a resize type name such as "
        "'lite', or a dict like {'type': 'deep', 'reason': '...', 'severity': 100}."
    )


def decide(
    force: Any,
    policy: PolicyHandler | None,
    policy_args: Callable[[], tuple[Any, ...]],
    default: Callable[[], Decision | None],
) -> Flow[Decision | None]:
    """The judge, written once as a flow: the forced, the user's (sync or async) or the default decision."""
    if force:
        return forced_decision(force)
    if policy is None:
        return default()
    result = yield Call(policy, policy_args())
    return normalize_decision(result)
