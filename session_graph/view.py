"""The view: exactly the messages to send to a model, within the token budget.

``[system prompt] + [summary or memo, as one system message] + window``. The system
prompt is always there; the summary or memo message takes what it holds, at most its
reserve (shortened by structure when the model's reply was over it, see ``context.py``);
the window gets the rest and is planned by ``budget.plan_budget``. Every tool call in it
is answered: a call with no result (cancelled, or still pending) gets a synthetic
"cancelled" ToolMessage, so a provider never rejects the request. Truncation happens here
only, on copies marked in ``response_metadata["session_graph"]``; the histories keep every
message whole.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, ToolMessage

from session_graph.budget import plan_budget
from session_graph.cards import view_card
from session_graph.context import MEMO_HEADER, context_message, fit_context
from session_graph.ledger import Ledger, system_prompt
from session_graph.messages import content_parts, role_of
from session_graph.settings import Limits
from session_graph.state import SessionState
from session_graph.tokens import truncate_to_tokens

__all__ = ["CANCELLED_TEXT", "MEMO_HEADER", "SessionView", "answered", "build_view", "truncate_message"]

CANCELLED_TEXT = "Cancelled: this tool call returned no result."


@dataclass(frozen=True)
class SessionView:
    """What to send to the model, and what it costs.

    Attributes:
        messages: system prompt, summary/memo message, window, in order.
        tokens: their total with the counter in use, reply priming and outside tokens included.
        budget: the token budget (0: none).
        counter: the name of the counter (``tiktoken:o200k_base``, ``approx:...``, ``chars``).
        exact: whether the counter is exact.
        truncated: ids of the messages cut to fit (as copies; the histories keep them whole).
        elided: messages of the current turn left out to keep its user message.
    """

    messages: list[BaseMessage]
    tokens: int
    budget: int
    counter: str
    exact: bool
    truncated: tuple[str, ...] = ()
    elided: int = 0

    def __iter__(self) -> Iterator[BaseMessage]:
        return iter(self.messages)

    def __len__(self) -> int:
        return len(self.messages)

    def __getitem__(self, index: int) -> BaseMessage:
        return self.messages[index]

    def _repr_html_(self) -> str:
        return view_card(self)  # the Jupyter card: tokens against the budget, the messages


def _cancelled(call: dict[str, Any], owner: AIMessage) -> ToolMessage:
    return ToolMessage(
        content=CANCELLED_TEXT,
        tool_call_id=call.get("id") or "",
        name=call.get("name"),
        status="error",
        id=f"{owner.id}:cancelled:{call.get('id')}",
        response_metadata={"session_graph": {"synthetic": "cancelled"}},
    )


def answered(messages: list[BaseMessage]) -> list[BaseMessage]:
    """``messages`` with every tool call answered, as providers require.

    A call with no result gets a synthetic "cancelled" ToolMessage right after the results it
    has (before the next user or assistant message, or at the end); a result whose call is not
    there is left out. Returns ``messages`` itself when nothing needs answering.
    """
    out: list[BaseMessage] = []
    open_calls: list[dict[str, Any]] = []
    owner: AIMessage | None = None
    changed = False

    def close() -> None:
        nonlocal changed
        if open_calls and owner is not None:
            out.extend(_cancelled(call, owner) for call in open_calls)
            open_calls.clear()
            changed = True

    for message in messages:
        if isinstance(message, ToolMessage):
            match = next((c for c in open_calls if c.get("id") == message.tool_call_id), None)
            if match is None and not (owner is not None and any(c.get("id") == message.tool_call_id for c in owner.tool_calls)):
                changed = True  # its call is not in these messages: a provider would reject it
                continue
            if match is not None:
                open_calls.remove(match)
            out.append(message)
            continue
        close()
        out.append(message)
        if isinstance(message, AIMessage) and message.tool_calls:
            owner, open_calls = message, list(message.tool_calls)
        else:
            owner = None
    close()
    return out if changed else messages


def truncate_message(message: BaseMessage, max_tokens: int, measure: Callable[[BaseMessage], int]) -> BaseMessage:
    """A copy of ``message`` whose text is cut to fit ``max_tokens`` exactly, marked truncated."""
    original = measure(message)
    text = "".join(
        part if isinstance(part, str) else part.get("text", "") for part in content_parts(message)
        if isinstance(part, str) or part.get("type") == "text"
    )

    def with_text(value: str) -> BaseMessage:
        marks = {**message.response_metadata.get("session_graph", {}), "truncated": True, "original_tokens": original}
        metadata: dict[str, Any] = {**message.response_metadata, "session_graph": marks}
        return message.model_copy(update={"content": value, "response_metadata": metadata})

    return with_text(truncate_to_tokens(text, max_tokens, lambda value: measure(with_text(value))))


def build_view(state: SessionState, ledger: Ledger, limits: Limits, outside_tokens: int = 0) -> SessionView:
    """Compose the view for a state (see the module docstring).

    ``outside_tokens`` is what the request spends beyond the view (an agent's own system
    prompt, say); it comes off the budget and is included in ``SessionView.tokens``.
    """
    measure = ledger.token_count
    system = system_prompt(state)
    window = list(state.current_chat_history)
    if window and system is not None and window[0] is system:
        window = window[1:]
    window = answered(window)
    whole = context_message(state.id, state.memo, limits)
    budget = limits.tokens
    truncated: list[str] = []
    if not budget:
        extra = fit_context(whole, limits.reserve_tokens, ledger.measure_context) if whole is not None else None
        messages = [m for m in (system, extra) if m is not None] + window
        total = sum(measure(m) for m in messages) + limits.reply_priming + outside_tokens
        return SessionView(messages, total, 0, ledger.counter.name, ledger.counter.exact)

    fixed = limits.reply_priming + outside_tokens
    room = budget - fixed
    tokens = [measure(m) for m in window]
    roles = [role_of(m) for m in window]
    newest_user = next((tokens[i] for i in range(len(roles) - 1, -1, -1) if roles[i] == "user"), 0)
    floor = min(newest_user, room // 2)  # room the window keeps for its newest user message
    system_tokens = measure(system) if system is not None else 0
    if system is not None and system_tokens > max(room - floor, 1):
        system = truncate_message(system, max(room - floor, 1), measure)
        truncated.append(system.id or "")
        system_tokens = measure(system)
    extra = None
    if whole is not None:  # it takes what it holds, at most its reserve; the window gets the rest
        extra = fit_context(whole, min(limits.reserve_tokens, room - system_tokens - floor), measure)
    extra_tokens = measure(extra) if extra is not None else 0
    plan = plan_budget(roles, tokens, room - system_tokens - extra_tokens)
    kept = []
    for index in plan.keep:
        message = window[index]
        if index == plan.truncate:
            message = truncate_message(message, plan.truncate_to, measure)
            truncated.append(message.id or "")
        kept.append(message)
    messages = [m for m in (system, extra) if m is not None] + kept
    total = sum(measure(m) for m in messages) + fixed
    if total > budget:
        # A cut message can stay over its share when its fixed part (overhead, tool ids)
        # is: keep the turn's user message alone, then drop the summary/memo message.
        users = [i for i in plan.keep if roles[i] == "user"]
        kept = [window[users[-1]]] if users else []
        truncated = [t for t in truncated if system is not None and t == system.id]
        for candidate in ([system, extra], [system]):
            messages = [m for m in candidate if m is not None] + kept
            total = sum(measure(m) for m in messages) + fixed
            if total <= budget:
                break
        if total > budget and kept:  # the user message itself, cut to what is left
            left = budget - total + measure(kept[0])
            messages[-1] = truncate_message(kept[0], left, measure)
            truncated.append(kept[0].id or "")
            total = sum(measure(m) for m in messages) + fixed
    return SessionView(messages, total, budget, ledger.counter.name, ledger.counter.exact, tuple(truncated), plan.elided)
