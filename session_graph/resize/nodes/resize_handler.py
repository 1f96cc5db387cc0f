"""A user's resize handler as a node: ``(full, current, memo, settings) -> (full, current, memo)``."""

from __future__ import annotations

from collections.abc import Callable
import copy
from typing import Any

from langchain_core.messages import BaseMessage
from langgraph.runtime import Runtime

from session_graph._base.exact_json import unstorable
from session_graph._base.flow import Flow, call
from session_graph.errors import HandlerResultError, MessageError
from session_graph.messages import to_message
from session_graph.resize.state import ResizeContext, SessionState


def resize_handler_node(resize_type: str) -> Callable[[SessionState, Runtime[ResizeContext]], Flow[dict[str, Any]]]:
    """A node running the handler registered for ``resize_type``.

    The handler gets copies of the histories and the memo, so one that edits them in
    place and then fails leaves the session untouched.
    """

    def run_resize_handler(state: SessionState, runtime: Runtime[ResizeContext]) -> Flow[dict[str, Any]]:
        handler = runtime.context.resize_handlers[resize_type]
        before = list(state.full_chat_history)  # kept aside: the handler gets its own copy
        full_in = list(before)
        result = yield from call(handler, full_in, list(state.current_chat_history), copy.deepcopy(state.memo), state.settings)
        full, current, memo = check_resize_result(result, before, resize_type)
        return {"full_chat_history": full, "current_chat_history": current, "memo": memo}

    run_resize_handler.__name__ = f"resize_handler_{resize_type}"
    return run_resize_handler


def check_resize_result(result: Any, before: list[Any], resize_type: str) -> tuple[list[Any], list[Any], dict[str, Any]]:
    """Validate a handler's ``(full, current, memo)``; dict messages are normalised."""
    name = f"the {resize_type!r} resize handler"
    if not isinstance(result, tuple | list) or len(result) != 3:
        raise HandlerResultError(f"{name} returned {result!r:.100}; return (full_chat_history, current_chat_history, memo).")
    full, current, memo = result
    if not isinstance(full, list) or not isinstance(current, list):
        raise HandlerResultError(f"{name} must return lists for both histories, got {type(full).__name__} and {type(current).__name__}.")
    if not isinstance(memo, dict):
        raise HandlerResultError(f"{name} must return the memo as a dict, got {type(memo).__name__}.")
    why = unstorable(memo, "the memo it returned")  # else every save of the session is refused, the memo blamed
    if why is not None:
        raise HandlerResultError(f"{name}: {why}")
    if len(full) < len(before):
        raise HandlerResultError(
            f"{name} returned a full history of {len(full)} messages, shorter than the {len(before)} "
            "stored; the full history only grows: prune current_chat_history instead."
        )
    for index, (old, new) in enumerate(zip(before, full, strict=False)):
        if new is not old and (not isinstance(new, BaseMessage) or new.id != old.id or new != old):
            raise HandlerResultError(
                f"{name} changed full_chat_history[{index}] (message {old.id!r}); the full history only grows: "
                "append to it, and prune or edit current_chat_history instead."
            )
    try:
        full = [to_message(m, where=f"{name} full_chat_history[{i}]") for i, m in enumerate(full)]
        current = [to_message(m, where=f"{name} current_chat_history[{i}]") for i, m in enumerate(current)]
    except MessageError as error:
        raise HandlerResultError(str(error)) from error
    return full, current, memo
