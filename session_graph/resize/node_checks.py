"""What a replaced node of the resize graph may return (``session.override_node``).

A node is ``(state) -> update`` or ``(state, runtime) -> update``, sync or async: ``state`` is
the :class:`~session_graph.resize.state.SessionState`, ``runtime.context`` the run's
:class:`~session_graph.resize.state.ResizeContext`, and ``update`` a dict of the state fields it
changes (``{"current_chat_history": [...]}``), or None. Built-in nodes keep the session's
invariants by construction; a replacement's update is checked against them before the graph
applies it, and a break is a :class:`~session_graph.errors.HandlerResultError` naming the node
and the rule:

1. the update is a dict of ``SessionState`` fields;
2. the full history only grows: its messages stay, in order, unchanged;
3. the window holds only messages of the full history, each once, in the history's order;
4. tool pairs stay together in the window: a result with its call, a call with the results
   the history has for it;
5. the memo is a dict; the counters are whole numbers, the memo cursor within the history.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import fields
from difflib import get_close_matches
import inspect
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, ToolMessage

from session_graph._base.exact_json import unstorable
from session_graph.errors import ConfigurationError, HandlerResultError
from session_graph.resize.state import SessionState

__all__ = ["check_node_signature", "check_node_update"]

_FIELDS = tuple(f.name for f in fields(SessionState))
_HANDLER_PARAMS = ("full", "current", "memo", "settings")


def check_node_signature(name: str, node: Callable[..., Any]) -> None:
    """Refuse, when it is set, a replacement that cannot be called as a node (``(state)`` or ``(state, runtime)``).

    Raises:
        ConfigurationError: it needs more than two arguments (a resize handler's
            ``(full, current, memo, settings)`` is named as such).
    """
    try:
        parameters = list(inspect.signature(node).parameters.values())
    except (TypeError, ValueError):
        return  # a builtin or C callable: nothing to read
    required = [p for p in parameters if p.default is inspect.Parameter.empty
                and p.kind in (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)]
    if len(required) <= 2:
        return
    names = [p.name for p in required]
    hint = ""
    if any(part in " ".join(names) for part in _HANDLER_PARAMS):
        hint = (" It reads like a resize handler (full, current, memo, settings) -> (full, current, memo): register that "
                "with session.set_resize_handlers('lite' or 'deep', handler) instead.")
    raise ConfigurationError(
        f"override_node({name!r}, {getattr(node, '__name__', type(node).__name__)}): a node is called as (state) or "
        f"(state, runtime) and returns a dict of the state fields it changes; this one needs {len(required)} "
        f"arguments ({', '.join(names)}).{hint}"
    )


def check_node_update(name: str, state: SessionState, update: Any) -> Any:
    """``update`` if it keeps every invariant (see the module docstring), else a HandlerResultError naming ``name`` and the rule."""
    where = f"the replaced node {name!r}"
    if update is None:
        return None
    if isinstance(update, SessionState):
        update = {field: getattr(update, field) for field in _FIELDS}
    if not isinstance(update, Mapping):
        raise HandlerResultError(
            f"{where} returned {type(update).__name__}; a node returns a dict of the SessionState fields it changes, "
            "e.g. {'current_chat_history': [...]} (rule 1)."
        )
    unknown = [key for key in update if key not in _FIELDS]
    if unknown:
        hints = [f"{key!r}" + (f" (did you mean {close[0]!r}?)" if (close := get_close_matches(str(key), _FIELDS, 1)) else "")
                 for key in unknown]
        raise HandlerResultError(f"{where} returned unknown state fields {', '.join(hints)} (rule 1: SessionState fields only).")
    full = _full(where, state.full_chat_history, update.get("full_chat_history", state.full_chat_history))
    if "current_chat_history" in update or "full_chat_history" in update:
        _window(where, full, update.get("current_chat_history", state.current_chat_history))
    if "memo" in update and not isinstance(update["memo"], dict):
        raise HandlerResultError(f"{where} returned memo as {type(update['memo']).__name__}; the memo is a dict (rule 5).")
    why = unstorable(update["memo"], "the memo it returned") if "memo" in update and update["memo"] is not state.memo else None
    if why is not None:  # else every save of the session is refused, the memo blamed
        raise HandlerResultError(f"{where}: {why} (rule 5).")
    for key in ("turns", "last_resize_turn", "memo_cursor", "archived_through"):
        value = update.get(key)
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 0):
            raise HandlerResultError(f"{where} returned {key}={value!r}; it is a whole number >= 0 (rule 5).")
    cursor = update.get("memo_cursor", state.memo_cursor)
    if isinstance(cursor, int) and cursor > len(full):
        raise HandlerResultError(f"{where} set memo_cursor {cursor} past the full history's {len(full)} messages (rule 5).")
    return update


def _full(where: str, before: list[BaseMessage], after: Any) -> list[BaseMessage]:
    if after is before:
        return before
    if not isinstance(after, list) or not all(isinstance(m, BaseMessage) for m in after):
        raise HandlerResultError(f"{where} returned full_chat_history that is not a list of messages (rule 2).")
    if len(after) < len(before):
        raise HandlerResultError(f"{where} shortened the full history from {len(before)} to {len(after)} messages; "
                                 "the full history only grows (rule 2): prune current_chat_history instead.")
    for index, (old, new) in enumerate(zip(before, after, strict=False)):
        if new is not old and (new.id != old.id or new != old):
            raise HandlerResultError(f"{where} changed full_chat_history[{index}] (message {old.id!r}); the full history "
                                     "only grows (rule 2): edit current_chat_history instead.")
    return after


def _window(where: str, full: list[BaseMessage], window: Any) -> None:
    if not isinstance(window, list) or not all(isinstance(m, BaseMessage) for m in window):
        raise HandlerResultError(f"{where} returned current_chat_history that is not a list of messages (rule 3).")
    position = {m.id: i for i, m in enumerate(full) if m.id}
    last = -1
    for index, message in enumerate(window):
        at = position.get(message.id or "")
        if at is None or (full[at] is not message and full[at] != message):
            raise HandlerResultError(
                f"{where} put a message in the window that is not in the full history: current_chat_history[{index}] "
                f"({type(message).__name__} {message.id!r}); the window holds only messages of the history (rule 3). "
                "To add one, append it to full_chat_history too."
            )
        if at <= last:
            raise HandlerResultError(f"{where} repeated or reordered the window at current_chat_history[{index}] "
                                     f"(message {message.id!r}); the window keeps the history's order (rule 3).")
        last = at
    _tool_pairs(where, full, window)


def _tool_pairs(where: str, full: list[BaseMessage], window: list[BaseMessage]) -> None:
    called = {c.get("id"): m for m in full if isinstance(m, AIMessage) for c in m.tool_calls}
    answered = {m.tool_call_id for m in full if isinstance(m, ToolMessage)}
    in_window = {m.id for m in window}
    results = {m.tool_call_id for m in window if isinstance(m, ToolMessage)}
    for message in window:
        if isinstance(message, ToolMessage):
            call = called.get(message.tool_call_id)
            if call is not None and call.id not in in_window:
                raise HandlerResultError(
                    f"{where} kept the tool result {message.id!r} without its call (message {call.id!r}); a tool call and "
                    "its results stay together in the window (rule 4)."
                )
        elif isinstance(message, AIMessage):
            missing = [c.get("id") for c in message.tool_calls if c.get("id") in answered and c.get("id") not in results]
            if missing:
                raise HandlerResultError(
                    f"{where} kept the tool call {message.id!r} without its result(s) for {', '.join(map(str, missing))}; "
                    "a tool call and its results stay together in the window (rule 4)."
                )
