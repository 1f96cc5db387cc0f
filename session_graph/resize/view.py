"""The view: exactly the messages to send to a model, within the token budget.

``[system prompt] + [summary or memo, as one system message] + window``. The system
prompt is always there; the summary or memo message takes what it holds, at most its
reserve (shortened by structure when the model's reply was over it, see ``compression/context.py``);
the window gets the rest and is planned by ``budget.plan_budget``. Every tool call in it
is answered and never apart from its results: a result stored after other messages (another
run's turn came between) is shown right after its call, a call with no result (cancelled,
ended by another middleware, or still pending) gets a synthetic "cancelled" ToolMessage, so a
provider never rejects the request; the histories keep what was stored, in its order. Truncation happens here
only, on copies marked in ``response_metadata["session_graph"]``; the histories keep every
message whole.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    ToolMessage,
    convert_to_openai_messages,
)

from session_graph.accounting.budget import plan_budget
from session_graph.accounting.tokens import truncate_to_tokens
from session_graph.compression.context import MEMO_HEADER, context_message, fit_context
from session_graph.compression.novelty import shown_terms
from session_graph.display.cards import view_card
from session_graph.messages import content_parts, role_of
from session_graph.resize.ledger import Ledger, system_prompt
from session_graph.resize.state import SessionState
from session_graph.resize.system_order import MergeCache, arranged_view
from session_graph.settings import Limits

__all__ = ["CANCELLED_TEXT", "MEMO_HEADER", "SessionView", "Tail", "answered", "build_view", "build_with_tail", "cancelled", "recent_history",
           "truncate_message"]

CANCELLED_TEXT = "Cancelled: this tool call returned no result."


@dataclass(frozen=True, init=False)
class SessionView:
    """What to send to the model, and what it costs.

    Attributes:
        messages: system prompt, summary/memo message, window, in order (the same list while
            nothing changed: read it, or copy it to edit; an edited one is built again next call).
        tokens: their total with the counter in use, reply priming and outside tokens included.
        budget: the token budget (0: none).
        counter: the name of the counter (``tiktoken:o200k_base``, ``approx:...``, ``chars``).
        exact: whether the counter is exact.
        truncated: ids of the messages cut to fit (as copies; the histories keep them whole).
        elided: messages of the current turn left out to keep its user message.
        low_water: the tokens a prune cuts the view down to (``session.tokens.prune_to_ratio`` of
            the budget), so the next resize is turns away; 0 without a token budget.
    """

    messages: list[BaseMessage]
    tokens: int
    budget: int
    counter: str
    exact: bool
    truncated: tuple[str, ...] = ()
    elided: int = 0
    low_water: int = 0

    def __init__(self, messages: list[BaseMessage], tokens: int, budget: int, counter: str, exact: bool,
                 truncated: tuple[str, ...] = (), elided: int = 0, low_water: int = 0) -> None:
        # one view per model call: the fields set at once (a frozen dataclass's own __init__ sets
        # each through object.__setattr__, 4x the cost)
        self.__dict__.update(messages=messages, tokens=tokens, budget=budget, counter=counter, exact=exact,
                             truncated=truncated, elided=elided, low_water=low_water)

    def __iter__(self) -> Iterator[BaseMessage]:
        return iter(self.messages)

    def __len__(self) -> int:
        return len(self.messages)

    def __getitem__(self, index: int) -> BaseMessage:
        return self.messages[index]

    def _repr_html_(self) -> str:
        return view_card(self)  # the Jupyter card: tokens against the budget, the messages


def cancelled(call: dict[str, Any], owner: AIMessage) -> ToolMessage:
    return ToolMessage(
        content=CANCELLED_TEXT,
        tool_call_id=call.get("id") or "",
        name=call.get("name"),
        status="error",
        id=f"{owner.id}:cancelled:{call.get('id')}",
        response_metadata={"session_graph": {"synthetic": "cancelled"}},
    )


def _late_results(messages: list[BaseMessage]) -> dict[str, ToolMessage]:
    """The results stored apart from their call, by call id: each first result of a call whose
    block of results had ended (another message came between), its call earlier in ``messages``."""
    late: dict[str, ToolMessage] = {}
    waiting: set[str] = set()  # calls whose results may still follow at once
    unanswered: set[str] = set()  # calls whose block ended without a result
    for message in messages:
        if isinstance(message, ToolMessage):
            call = message.tool_call_id
            if call in waiting:
                waiting.discard(call)
            elif call in unanswered and call not in late:
                late[call] = message
            continue
        if waiting:
            unanswered |= waiting
            waiting = set()
        if isinstance(message, AIMessage) and message.tool_calls:
            waiting = {c.get("id") or "" for c in message.tool_calls}
    return late


def answered(messages: list[BaseMessage]) -> list[BaseMessage]:
    """``messages`` with every tool call answered, as providers require, and never a call apart
    from its results.

    A result stored after other messages (its run's tool returned while another run on the
    same thread took a turn) is shown right after its call's other results; a call with no
    result at all gets a synthetic "cancelled" ToolMessage there (before the next user or
    assistant message, or at the end); a result whose call is not there is left out. The
    history keeps what happened, in the order it was stored. Returns ``messages`` itself when
    nothing needs answering or moving.
    """
    late = _late_results(messages)
    moved = {id(m) for m in late.values()}
    out: list[BaseMessage] = []
    open_calls: list[dict[str, Any]] = []
    owner: AIMessage | None = None
    changed = False

    def close() -> None:
        nonlocal changed
        if open_calls and owner is not None:
            out.extend(late.get(call.get("id") or "") or cancelled(call, owner) for call in open_calls)
            open_calls.clear()
            changed = True

    for message in messages:
        if isinstance(message, ToolMessage):
            if id(message) in moved:
                changed = True  # shown after its call
                continue
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


def _reach(window: list[BaseMessage], measure: Callable[[BaseMessage], int], room: int) -> int:
    """Where the newest part of ``window`` a view could keep starts: whole units back to the
    first that overflows ``room``, and back to the newest user message. O(that part).

    A unit is a tool call with its results by ``tool_call_id``, wherever they were stored: a
    result stored late (after another run's turn) is shown after its call (``answered``), so its
    tokens count where its call is, and not at all while its call is further back (the view
    leaves it out with its call). Counted by position, it would end the reach early and the view
    would keep less than fits.
    """
    used, index, newest_user = 0, len(window) - 1, False
    start = len(window)
    deferred: dict[str, int] = {}  # tokens of the results read whose call is further back
    while index >= 0:
        first = index
        while first > 0 and isinstance(window[first], ToolMessage):
            first -= 1
        head = window[first]
        own = {c.get("id") or "" for c in head.tool_calls} if isinstance(head, AIMessage) and head.tool_calls else set()
        for message in window[first : index + 1]:
            if isinstance(message, ToolMessage) and message.tool_call_id not in own:
                deferred[message.tool_call_id] = deferred.get(message.tool_call_id, 0) + measure(message)
            else:
                used += measure(message)
        for call in own:
            used += deferred.pop(call, 0)
        newest_user = newest_user or isinstance(head, HumanMessage)
        start = first
        if used > room and newest_user:
            break
        index = first - 1
    return start


@dataclass
class Tail:
    """What the last view under a token budget kept, to extend it when messages were only appended.

    Valid while the window is the same list (appends keep it; a resize or a load makes a new
    one) and nothing else the view depends on changed.
    """

    window: list[BaseMessage]
    length: int
    key: tuple[Any, ...]
    keep_from: int  # index in ``window`` of the first kept message
    used: int  # tokens of window[keep_from:length]
    newest_user: int  # index in ``window`` of the newest user message
    system: BaseMessage | None
    system_tokens: int
    extra: BaseMessage | None
    extra_tokens: int
    room: int  # tokens for the window (the budget less everything else)

    @property
    def head(self) -> list[BaseMessage]:
        """What comes before the window in the view: the system prompt, the summary or memo message."""
        system, extra = self.system, self.extra
        if system is None:
            return [extra] if extra is not None else []
        return [system, extra] if extra is not None else [system]


def build_view(state: SessionState, ledger: Ledger, limits: Limits, outside_tokens: int = 0) -> SessionView:
    """Compose the view for a state (see the module docstring).

    ``outside_tokens`` is what the request spends beyond the view (an agent's own system
    prompt, say); it comes off the budget and is included in ``SessionView.tokens``.
    """
    view = build_with_tail(state, ledger, limits, outside_tokens)[0]
    return arranged_view(view, limits.system_messages, ledger.token_count, limits.reply_priming + outside_tokens,
                         lambda systems: MergeCache().merged(systems, None, ledger.uncached_count))


def build_with_tail(state: SessionState, ledger: Ledger, limits: Limits, outside_tokens: int) -> tuple[SessionView, Tail | None]:
    """The view built whole (system messages not arranged), and the tail a ``ViewBuilder`` extends
    next (None when this view cannot be extended: a cut, an elided turn, an answered call)."""
    measure = ledger.token_count
    system = system_prompt(state)
    full_window = state.current_chat_history
    skip = 1 if full_window and system is not None and full_window[0] is system else 0
    window = full_window[skip:]
    whole = context_message(state.id, state.memo, limits)
    budget = limits.tokens
    truncated: list[str] = []
    offset = skip
    if budget:
        reach = _reach(window, measure, budget - limits.reply_priming - outside_tokens)
        window, offset = window[reach:], skip + reach
    candidate = list(window)
    window = answered(candidate)
    clean = window is candidate  # nothing answered or dropped: the view is a slice of the window
    if not budget:
        extra = fit_context(whole, limits.reserve_tokens, ledger.measure_context, lambda: shown_terms(window)) if whole is not None else None
        messages = [m for m in (system, extra) if m is not None] + window
        total = sum(measure(m) for m in messages) + limits.reply_priming + outside_tokens
        return SessionView(messages, total, 0, ledger.counter.name, ledger.counter.exact), None

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
        extra = fit_context(whole, min(limits.reserve_tokens, room - system_tokens - floor), measure, lambda: shown_terms(window))
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
        return SessionView(messages, total, budget, ledger.counter.name, ledger.counter.exact, tuple(truncated),
                           low_water=limits.prune_tokens), None
    view = SessionView(messages, total, budget, ledger.counter.name, ledger.counter.exact, tuple(truncated), plan.elided,
                       limits.prune_tokens)
    users = [i for i, role in enumerate(roles) if role == "user"]
    if truncated or plan.elided or not clean or not plan.keep or not users or plan.keep[-1] != len(window) - 1:
        return view, None
    tail = Tail(
        window=full_window, length=len(full_window), key=(), keep_from=offset + plan.keep[0],
        used=sum(tokens[plan.keep[0] :]), newest_user=offset + users[-1], system=system, system_tokens=system_tokens,
        extra=extra, extra_tokens=extra_tokens, room=room,
    )
    return view, tail


def recent_history(window: list[BaseMessage], limit: int) -> list[dict[str, Any]]:
    """The newest ``limit`` window messages as OpenAI-style dicts (``Session.get_history``).

    Opens on a user turn when the slice holds one, cut so that no tool result loses its call; a
    tool call with no result is answered (as in the view); ``reasoning_content`` is kept.
    """
    window = answered(list(window))
    first = max(0, len(window) - max(limit, 0))
    user = next((index for index in range(first, len(window)) if role_of(window[index]) == "user"), None)
    if user is not None:
        first = user
    while first < len(window) and role_of(window[first]) == "tool":  # its call is outside: skip it
        first += 1
    chosen = window[first:]
    history = convert_to_openai_messages(chosen)
    for message, entry in zip(chosen, history, strict=True):  # type: ignore[arg-type]
        reasoning = message.additional_kwargs.get("reasoning_content")
        if reasoning is not None:
            entry["reasoning_content"] = reasoning
    return history  # type: ignore[return-value]
