"""Hypothesis properties of the window over random histories (DESIGN.md invariants)."""

from __future__ import annotations

import contextlib
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage

from session_graph import MemoUpdateError, Session, WindowTotals, message_chars
from session_graph.accounting.window import unit_starts
from session_graph.compression.backoff import prune_unpinned
from session_graph.messages import role_of

TEXT = st.text(alphabet=st.sampled_from(list("abc xyz.") + list("中文字符") + ["\n"]), min_size=0, max_size=60)


@st.composite
def turns(draw: Any) -> list[BaseMessage]:
    """One turn: maybe a system note, a user message, maybe parallel tool calls, a reply."""
    out: list[BaseMessage] = []
    if draw(st.integers(0, 9)) == 0:
        out.append(SystemMessage(content=draw(TEXT)))
    if draw(st.booleans()):
        out.append(HumanMessage(content=draw(TEXT)))
    else:
        out.append(HumanMessage(content=[
            {"type": "text", "text": draw(TEXT)},
            {"type": "image_url", "image_url": {"url": "data:image/png;base64," + "QUJD" * draw(st.integers(1, 400))}},
        ]))
    for step in range(draw(st.integers(0, 2))):
        calls = draw(st.integers(1, 3))
        ids = [f"c{draw(st.integers(0, 10**9))}-{step}-{i}" for i in range(calls)]
        out.append(AIMessage(content=draw(TEXT), tool_calls=[{"id": i, "name": "f", "args": {"x": draw(TEXT)}} for i in ids]))
        out.extend(ToolMessage(content=draw(TEXT), tool_call_id=i) for i in ids)
    out.append(AIMessage(content=draw(TEXT)))
    return out


def check_window(session: Session, appended: list[BaseMessage]) -> None:
    full, window = session.full_chat_history, session.current_chat_history
    assert full == appended and all(a is b for a, b in zip(full, appended, strict=True))  # full history untouched
    assert window == full[len(full) - len(window):]  # a contiguous newest part
    roles = [role_of(m) for m in window]
    if window:
        assert roles[0] != "tool"
    ids_in_window = {m.id for m in window}
    for position, message in enumerate(window):  # no call without all its results, no result without its call
        if isinstance(message, AIMessage) and message.tool_calls:
            results = {m.tool_call_id for m in window[position + 1:] if isinstance(m, ToolMessage)}
            full_results = {m.tool_call_id for m in full if isinstance(m, ToolMessage)}
            assert {c["id"] for c in message.tool_calls} & full_results <= results
        if isinstance(message, ToolMessage):
            calls = [m for m in window[:position] if isinstance(m, AIMessage) and any(c["id"] == message.tool_call_id for c in m.tool_calls)]
            assert calls, "a tool result lost its call"
    assert session.window_totals == WindowTotals.of(roles, [message_chars(m) for m in window])
    assert ids_in_window <= {m.id for m in full}


def over_limits_only_as_one_unit(session: Session) -> None:
    limits = session.settings.resolved()
    window = session.current_chat_history
    single_unit = len(unit_starts([role_of(m) for m in window])) <= 1
    if limits.chars:
        assert session.window_totals.chars < limits.chars or single_unit
    if limits.messages:
        assert len(window) <= limits.messages or single_unit


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    history=st.lists(turns(), min_size=1, max_size=12),
    chars=st.sampled_from([0, 80, 200, 600]),
    messages=st.sampled_from([None, 1, 3, 7]),
    resize_every=st.integers(1, 4),
)
def test_lite_windows_keep_every_invariant(history: list[list[BaseMessage]], chars: int, messages: int | None, resize_every: int) -> None:
    session = Session().use_lite(chars=chars, messages=messages)
    appended: list[BaseMessage] = []
    for number, turn in enumerate(history):
        for message in turn:
            session.append_message(message)
            appended.append(session.full_chat_history[-1])
        if number % resize_every == 0:
            decision = session.judge_resize()
            session.resize()
            check_window(session, appended)
            if decision is not None:
                over_limits_only_as_one_unit(session)
                limits = session.settings.resolved()  # a resize leaves nothing for the limits to fire on
                assert session.window_totals.prunable(limits.chars, limits.messages) == (False, False, False)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    history=st.lists(turns(), min_size=1, max_size=10),
    chars=st.sampled_from([80, 300]),
    failures=st.lists(st.booleans(), min_size=1, max_size=40),
)
def test_memo_mode_never_drops_what_the_memo_does_not_cover(history: list[list[BaseMessage]], chars: int, failures: list[bool]) -> None:
    plan = iter(failures * 10)
    folded: list[str] = []

    def flaky(memo, messages, attachments, settings):  # type: ignore[no-untyped-def]
        if next(plan, False):
            raise ConnectionError("flaky model")
        # a message larger than a chunk comes in pieces: it is folded once its last piece is
        for message in messages:
            piece = message.response_metadata.get("session_graph", {}).get("piece")
            if piece is None or piece[0] == piece[1]:
                folded.append(message.id)
        return {"n": memo.get("n", 0) + len(messages)}

    session = Session(memo_update_handler=flaky).use_memo(chars=chars)
    appended: list[BaseMessage] = []
    for turn in history:
        for message in turn:
            session.append_message(message)
            appended.append(session.full_chat_history[-1])
        with contextlib.suppress(MemoUpdateError):
            session.resize()
        check_window(session, appended)
        cursor = session.memo_cursor
        uncovered = session.full_chat_history[cursor:]
        if not prune_unpinned(session._state.fold_records):  # in a failing model's back-off the window keeps to its limits
            assert session.current_chat_history[len(session.current_chat_history) - len(uncovered):] == uncovered or not uncovered
            assert len(session.current_chat_history) >= len(uncovered)
        assert folded == [m.id for m in appended[:cursor]]  # each message folded exactly once, in order
