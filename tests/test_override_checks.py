"""A replaced node's update is checked against the session's invariants, naming the node and the rule."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from conftest import Api, chat
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
import pytest

from session_graph import ConfigurationError, HandlerResultError, Session


def tool_session() -> Session:
    session = chat(Session(), 2)
    session.append_message({"role": "user", "content": "look it up"})
    session.append_message(AIMessage(content="", tool_calls=[{"id": "c1", "name": "search", "args": {"q": "x"}}]))
    session.append_message(ToolMessage(content="found", tool_call_id="c1"))
    session.append_message({"role": "assistant", "content": "done"})
    return session


def stranger(state: Any) -> dict[str, Any]:
    return {"current_chat_history": [*state.current_chat_history[-2:], HumanMessage(content="never appended", id="x1")]}


def orphan_result(state: Any) -> dict[str, Any]:
    return {"current_chat_history": state.current_chat_history[-2:]}  # the tool result and the reply, not the call


def call_without_result(state: Any) -> dict[str, Any]:
    window = state.current_chat_history
    return {"current_chat_history": [m for m in window if not isinstance(m, ToolMessage)]}


def reordered(state: Any) -> dict[str, Any]:
    return {"current_chat_history": list(reversed(state.current_chat_history[-2:]))}


def shrinks_history(state: Any) -> dict[str, Any]:
    return {"full_chat_history": state.full_chat_history[1:]}


def typo(state: Any) -> dict[str, Any]:
    return {"current_chat_histroy": []}


def not_a_dict(state: Any) -> list[Any]:
    return state.current_chat_history[-2:]


def bad_memo(state: Any) -> dict[str, Any]:
    return {"memo": "notes"}


@pytest.mark.parametrize(
    ("node", "message"),
    [
        (stranger, r"'lite_prune' put a message in the window that is not in the full history: current_chat_history\[2\] "
                   r"\(HumanMessage 'x1'\).*\(rule 3\)"),
        (orphan_result, r"'lite_prune' kept the tool result .* without its call .*\(rule 4\)"),
        (call_without_result, r"'lite_prune' kept the tool call .* without its result\(s\) for c1.*\(rule 4\)"),
        (reordered, r"repeated or reordered the window.*\(rule 3\)"),
        (shrinks_history, r"shortened the full history from 8 to 7 messages.*\(rule 2\)"),
        (typo, r"unknown state fields 'current_chat_histroy' \(did you mean 'current_chat_history'\?\)"),
        (not_a_dict, r"'lite_prune' returned list; a node returns a dict of the SessionState fields"),
        (bad_memo, r"returned memo as str; the memo is a dict \(rule 5\)"),
    ],
)
def test_a_broken_invariant_names_the_node_and_the_rule_and_changes_nothing(api: Api, node: Any, message: str) -> None:
    session = tool_session().override_node("lite_prune", node)
    before = json.loads(session.to_json())
    with pytest.raises(HandlerResultError, match=message):
        api.resize(session, "lite")
    after = json.loads(session.to_json())
    after.pop("trace", None)
    before.pop("trace", None)
    assert after == before  # nothing stored changed


def test_valid_replacements_still_work_sync_and_async(api: Api) -> None:
    def keep_pair(state: Any, runtime: Any) -> dict[str, Any]:
        return {"current_chat_history": state.current_chat_history[-4:-1]}  # call, result... and the user turn before

    async def keep_last(state: Any) -> dict[str, Any]:
        await asyncio.sleep(0)
        return {"current_chat_history": state.current_chat_history[-1:]}

    session = tool_session().override_node("lite_prune", keep_pair)
    assert [type(m).__name__ for m in api.resize(session, "lite")] == ["HumanMessage", "AIMessage", "ToolMessage"]
    session = tool_session().override_node("lite_prune", keep_last)
    assert [m.content for m in api.resize(session, "lite")] == ["done"]
    session = tool_session().override_node("lite_prune", lambda state: None)  # no change is a valid update
    assert len(api.resize(session, "lite")) == 8


def test_a_resize_handler_signature_is_refused_when_set_with_the_fix() -> None:
    def handler(full, current, memo, settings):  # type: ignore[no-untyped-def]
        return full, current[-2:], memo

    with pytest.raises(ConfigurationError, match=r"override_node\('lite_prune', handler\): a node is called as \(state\) or "
                                                 r"\(state, runtime\).*needs 4 arguments \(full, current, memo, settings\)"
                                                 r".*set_resize_handlers"):
        Session().override_node("lite_prune", handler)
    session = chat(Session(), 3).set_resize_handlers("lite", handler)  # where that signature belongs: it works
    assert len(session.resize("lite")) == 2
