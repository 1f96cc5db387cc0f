"""The view: exactly the messages to send to a model, within the token budget.

``[system prompt] + [summary or memo, as one system message] + window``. The system
prompt is always there; the summary or memo message stays inside its reserve; the window
is planned by ``budget.plan_budget``. Truncation happens here only, on copies marked in
``response_metadata["session_graph"]``; the histories keep every message whole.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
import json
from typing import Any

from langchain_core.messages import BaseMessage, SystemMessage

from session_graph.budget import plan_budget
from session_graph.ledger import Ledger, system_prompt
from session_graph.messages import content_parts, role_of
from session_graph.nodes.memo_update import memo_for_model
from session_graph.settings import Limits
from session_graph.state import SessionState
from session_graph.summary import SUMMARY_HEADER
from session_graph.tokens import truncate_to_tokens

__all__ = ["MEMO_HEADER", "SessionView", "build_view", "context_message", "truncate_message"]

MEMO_HEADER = "Memo of the earlier conversation (JSON):\n"


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


def context_message(state: SessionState, limits: Limits) -> SystemMessage | None:
    """The summary (summary mode) or memo (memo mode) as one system message, if there is one."""
    if limits.summary_enabled and state.memo.get("summary"):
        return SystemMessage(content=SUMMARY_HEADER + str(state.memo["summary"]), id=f"{state.id}:summary")
    memo = memo_for_model(state.memo)
    if limits.memo_enabled and memo:
        text = json.dumps(memo, ensure_ascii=False, default=str)
        return SystemMessage(content=MEMO_HEADER + text, id=f"{state.id}:memo")
    return None


def truncate_message(message: BaseMessage, max_tokens: int, measure: Callable[[BaseMessage], int]) -> BaseMessage:
    """A copy of ``message`` whose text is cut to fit ``max_tokens`` exactly, marked truncated."""
    original = measure(message)
    text = "".join(
        part if isinstance(part, str) else part.get("text", "") for part in content_parts(message)
        if isinstance(part, str) or part.get("type") == "text"
    )

    def with_text(value: str) -> BaseMessage:
        metadata: dict[str, Any] = {**message.response_metadata, "session_graph": {"truncated": True, "original_tokens": original}}
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
    extra = context_message(state, limits)
    budget = limits.tokens
    truncated: list[str] = []
    if not budget:
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
    if extra is not None:
        extra_room = min(limits.reserve_tokens, room - system_tokens - floor)
        if extra_room <= 0:
            extra = None
        elif measure(extra) > extra_room:
            extra = truncate_message(extra, extra_room, measure)
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
