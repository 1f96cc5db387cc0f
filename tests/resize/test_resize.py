"""resize: the default lite/deep routes, handlers, overrides, failures, event loops."""

from __future__ import annotations

import asyncio
from typing import Any

from conftest import Api, chat
from langchain_core.messages import AIMessage
import pytest

from session_graph import ConfigurationError, HandlerResultError, Session, UnknownResizeTypeError, message_chars


def snapshot(session: Session) -> tuple[Any, ...]:
    return (
        list(session.full_chat_history),
        list(session.current_chat_history),
        dict(session.memo),
        session.turns,
        session.last_resize_turn,
        session.memo_cursor,
        session.window_totals,
    )


def test_lite_keeps_the_last_n_messages_then_fits_the_chars(api: Api) -> None:
    session = chat(Session().use_lite(messages=4), 5)
    assert api.judge(session)["reason"] == "max_keep_messages_count"
    window = api.resize(session)
    assert [m.content[:2] for m in window] == ["u3", "a3", "u4", "a4"]
    assert len(session.full_chat_history) == 10
    assert session.memo["last_resize"] == {"type": "lite", "turn": 5, "reason": "max_keep_messages_count"}
    assert session.last_resize_turn == 5
    session.use_lite(messages=4, chars=40)  # each message is 5 + 10 or 10 + 10 chars
    window = api.resize(session, "lite")
    assert [m.content[:2] for m in window] == ["u4", "a4"]
    assert session.memo["last_resize"]["reason"] == "force"


def test_deep_prunes_by_chars_from_the_newest_end_whole_messages_only(api: Api) -> None:
    session = chat(Session().use_lite(chars=100), 6)
    assert api.judge(session)["type"] == "deep"
    window = api.resize(session)
    assert sum(message_chars(m) for m in window) < 100
    assert window == session.full_chat_history[-len(window):]
    assert window[0].type == "human"
    assert session.window_totals.chars == sum(message_chars(m) for m in window)
    assert session.memo["last_resize"] == {"type": "deep", "turn": 6, "reason": "max_messages_text_length"}


def test_no_decision_changes_nothing(api: Api) -> None:
    session = chat(Session(), 2)
    before = snapshot(session)
    assert api.resize(session) == session.current_chat_history
    assert snapshot(session) == before and "last_resize" not in session.memo


def test_unknown_type_is_a_key_error_naming_the_fix(api: Api) -> None:
    session = chat(Session(policy_handler=lambda f, c, s: "summarize"), 2)
    before = snapshot(session)
    with pytest.raises(KeyError, match="set_resize_handlers\\('summarize'") as caught:
        api.resize(session)
    assert isinstance(caught.value, UnknownResizeTypeError)
    assert snapshot(session) == before


@pytest.mark.parametrize("kind", ["sync", "async"])
def test_custom_type_routes_to_its_handler(api: Api, kind: str) -> None:
    calls = []

    def handler(full, current, memo, settings):  # type: ignore[no-untyped-def]
        calls.append((len(full), len(current), dict(memo), settings["session.mode"]))
        memo["summarized"] = True
        return full, current[-1:], memo

    async def async_handler(full, current, memo, settings):  # type: ignore[no-untyped-def]
        return handler(full, current, memo, settings)

    session = chat(Session(resize_handlers={"summarize": handler if kind == "sync" else async_handler}), 3)
    window = api.resize(session, "summarize")
    assert calls == [(6, 6, {}, "lite")]
    assert [m.content[:2] for m in window] == ["a2"]
    assert session.memo["summarized"] is True
    assert session.memo["last_resize"] == {"type": "summarize", "turn": 3, "reason": "force"}
    assert session.window_totals.count == 1


def test_a_lite_handler_replaces_the_default_lite_route(api: Api) -> None:
    session = chat(Session(), 8)
    session.set_resize_handlers("lite", lambda full, current, memo, settings: (full, [], {**memo, "mine": 1}))
    assert api.judge(session)["reason"] == "every_n_turns"
    assert api.resize(session) == []
    assert session.memo["mine"] == 1 and len(session.full_chat_history) == 16
    assert "lite: user handler" in session.draw_mermaid()


@pytest.mark.parametrize(
    ("result", "words"),
    [
        (None, "return \\(full_chat_history"),
        (([], [], {}), "shorter than"),
        (("x", [], {}), "lists for both histories"),
        (("FULL", [], []), "memo as a dict"),
        (("FULL", [{"role": "nobody", "content": "x"}], {}), "role 'nobody'"),
    ],
)
def test_a_bad_handler_result_raises_and_leaves_the_session_unchanged(api: Api, result: Any, words: str) -> None:
    session = chat(Session(), 2)
    session.memo["kept"] = {"nested": [1]}

    def handler(full, current, memo, settings):  # type: ignore[no-untyped-def]
        memo["kept"]["nested"].append(2)  # in-place edits must not leak on failure
        current.clear()
        return tuple(full if item == "FULL" else item for item in result) if isinstance(result, tuple) else result

    session.set_resize_handlers("custom", handler)
    before = snapshot(session)
    with pytest.raises(HandlerResultError, match=words):
        api.resize(session, "custom")
    assert snapshot(session) == before and session.memo["kept"] == {"nested": [1]}


def test_a_failing_handler_leaves_the_session_unchanged(api: Api) -> None:
    def boom(full, current, memo, settings):  # type: ignore[no-untyped-def]
        raise RuntimeError("handler exploded")

    session = chat(Session(resize_handlers={"deep": boom}), 2)
    before = snapshot(session)
    with pytest.raises(RuntimeError, match="handler exploded"):
        api.resize(session, True)
    assert snapshot(session) == before


def test_a_node_override_replaces_one_node(api: Api) -> None:
    def keep_two(state, runtime):  # type: ignore[no-untyped-def]
        return {"current_chat_history": state.current_chat_history[-2:]}

    session = chat(Session(), 5).override_node("lite_prune", keep_two)
    assert [m.content[:2] for m in api.resize(session, "lite")] == ["u4", "a4"]
    session.override_node("lite_prune", None)
    assert len(api.resize(session, "lite")) == 2  # default prune: within the default limits
    with pytest.raises(ConfigurationError, match="no node 'prune'"):
        session.override_node("prune", keep_two)
    with pytest.raises(ConfigurationError, match="cannot name a graph node"):
        session.set_resize_handlers("judge", lambda *a: a)


def test_handlers_must_be_callable() -> None:
    with pytest.raises(ConfigurationError, match="policy handler must be callable"):
        Session(policy_handler="lite")  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError, match="memo update handler"):
        Session().set_memo_update_handler(3)  # type: ignore[arg-type]


def test_tool_calls_stay_with_their_results_and_the_window_opens_on_a_user_turn(api: Api) -> None:
    session = Session().use_lite(messages=3)
    session.append_message({"role": "user", "content": "weather in two cities?"})
    session.append_message(AIMessage(content="", tool_calls=[
        {"id": "a", "name": "weather", "args": {"city": "Oslo"}},
        {"id": "b", "name": "weather", "args": {"city": "Rome"}},
    ]))
    session.append_message({"role": "tool", "tool_call_id": "a", "content": "cold"})
    session.append_message({"role": "tool", "tool_call_id": "b", "content": "warm"})
    session.append_message({"role": "assistant", "content": "Oslo cold, Rome warm."})
    window = api.resize(session, "lite")
    # keeping the last 3 would open on a tool result and split the call: the whole unit goes
    assert [m.type for m in window] == ["ai"]
    session.use_lite(messages=4)
    session.append_message({"role": "user", "content": "thanks"})
    session.append_message({"role": "assistant", "content": "welcome"})
    assert [m.type for m in api.resize(session, "lite")] == ["human", "ai"]


def test_sync_calls_work_inside_a_running_event_loop() -> None:
    async def in_loop() -> tuple[Any, Any]:
        async def async_policy(full, current, settings):  # type: ignore[no-untyped-def]
            await asyncio.sleep(0)
            return "lite" if len(current) > 2 else None

        session = chat(Session(policy_handler=async_policy).use_lite(messages=2), 3)
        decision = session.judge_resize()  # sync, inside a running loop, with an async policy
        window = session.resize()
        return decision, window

    decision, window = asyncio.run(in_loop())
    assert decision == {"type": "lite"} and len(window) == 2


def test_two_resizes_at_once_are_refused() -> None:
    async def scenario() -> None:
        started = asyncio.Event()

        async def slow(full, current, memo, settings):  # type: ignore[no-untyped-def]
            started.set()
            await asyncio.sleep(0.05)
            return full, current, memo

        session = chat(Session(resize_handlers={"slow": slow}), 1)
        first = asyncio.create_task(session.async_resize("slow"))
        await started.wait()
        with pytest.raises(Exception, match="already resizing"):
            await session.async_resize("slow")
        await first

    asyncio.run(scenario())


def test_messages_appended_during_an_async_resize_join_the_window() -> None:
    async def scenario() -> Session:
        session = chat(Session().use_lite(messages=2), 3)
        entered, gate = asyncio.Event(), asyncio.Event()

        async def slow(full, current, memo, settings):  # type: ignore[no-untyped-def]
            entered.set()
            await gate.wait()
            return full, current[-2:], memo

        session.set_resize_handlers("slow", slow)
        task = asyncio.create_task(session.async_resize("slow"))
        await entered.wait()  # the handler holds its snapshot of the window
        session.append_message({"role": "user", "content": "late"})
        gate.set()
        await task
        return session

    session = asyncio.run(scenario())
    assert [m.content[:4] for m in session.current_chat_history] == ["u2..", "a2..", "late"]
    assert session.window_totals.count == 3
