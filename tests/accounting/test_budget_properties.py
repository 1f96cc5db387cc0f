"""Hypothesis properties of the view under a token budget, and a differential test.

Over random histories with parallel tool calls, system messages, images and CJK text:
the view is within budget, keeps the system prompt and the newest user message, never
splits a tool call from its results, is contiguous (but for the middle of an oversized
current turn), and the full history is untouched. On tool-free histories the window is
exactly what langchain-core's ``trim_messages`` keeps with the same counter.
"""

from __future__ import annotations

import itertools
import random
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage, trim_messages
import pytest

from session_graph import Session
from session_graph.accounting.tokens import message_tokens
from session_graph.resize import view_builder
from session_graph.resize.view import build_view

TEXT = st.text(alphabet=st.sampled_from(list("abc xyz.,") + list("中文字符会话") + ["\n"]), min_size=0, max_size=120)
SETTINGS = settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@st.composite
def turn(draw: Any) -> list[BaseMessage]:
    out: list[BaseMessage] = []
    if draw(st.integers(0, 12)) == 0:
        out.append(SystemMessage(content=draw(TEXT)))
    if draw(st.integers(0, 4)) == 0:
        out.append(HumanMessage(content=[
            {"type": "text", "text": draw(TEXT)},
            {"type": "image_url", "image_url": {"url": "https://x.test/i.png", "detail": draw(st.sampled_from(["low", "high"]))},
             "width": draw(st.integers(1, 3000)), "height": draw(st.integers(1, 3000))},
        ]))
    else:
        out.append(HumanMessage(content=draw(TEXT)))
    for step in range(draw(st.integers(0, 3))):
        ids = [f"c{draw(st.integers(0, 10**12))}-{step}-{i}" for i in range(draw(st.integers(1, 3)))]
        out.append(AIMessage(content=draw(TEXT), tool_calls=[{"id": i, "name": "f", "args": {"q": draw(TEXT)}} for i in ids]))
        # some results may never come: a cancelled call (the user speaks next) or a pending one (the history ends)
        answered = draw(st.lists(st.sampled_from(ids), unique=True)) if draw(st.integers(0, 3)) == 0 else ids
        out.extend(ToolMessage(content=draw(TEXT), tool_call_id=i) for i in ids if i in answered)
    if draw(st.booleans()):
        out.append(AIMessage(content=draw(TEXT)))
    return out


def assert_provider_valid(messages: list[BaseMessage]) -> None:
    """What chat providers require: every tool call answered right after it, no result without its call."""
    open_calls: set[str] = set()
    for message in messages:
        if isinstance(message, ToolMessage):
            assert message.tool_call_id in open_calls, f"result {message.tool_call_id} has no call just before it"
            open_calls.discard(message.tool_call_id)
            continue
        assert not open_calls, f"calls {sorted(open_calls)} were never answered"
        if isinstance(message, AIMessage) and message.tool_calls:
            open_calls = {c["id"] for c in message.tool_calls}
    assert not open_calls, f"calls {sorted(open_calls)} were never answered"


def check_view(session: Session, appended: list[BaseMessage], budget: int) -> None:
    view = session.view()
    full_build = build_view(session.state, session._ledger, session.settings.resolved())
    assert [m.id for m in view.messages] == [m.id for m in full_build.messages]  # the incremental view is the view
    assert (view.tokens, view.truncated, view.elided) == (full_build.tokens, full_build.truncated, full_build.elided)
    messages = view.messages
    assert view.tokens <= budget
    assert view.tokens == sum(message_tokens(m, session.counter) for m in messages) + 3
    full = session.full_chat_history
    assert full == appended and all(a is b for a, b in zip(full, appended, strict=True))
    system = full[0] if isinstance(full[0], SystemMessage) else None
    body = [m for m in (messages[1:] if system is not None else messages) if not (m.id or "").endswith((":summary", ":memo"))]
    for message in body:  # a synthetic result answers exactly a call that has none right after it
        if message.response_metadata.get("session_graph", {}).get("synthetic") == "cancelled":
            owner = next(i for i, m in enumerate(full) if m.id == message.id.split(":cancelled:")[0])
            results = []
            for later in full[owner + 1 :]:
                if not isinstance(later, ToolMessage):
                    break
                results.append(later.tool_call_id)
            assert isinstance(message, ToolMessage) and message.tool_call_id not in results
    body = [m for m in body if not m.response_metadata.get("session_graph", {}).get("synthetic")]
    if system is not None:
        assert messages[0].id == system.id
    ids = [m.id for m in body]
    positions = [next(i for i, f in enumerate(full) if f.id == m) for m in ids]
    assert positions == sorted(positions)  # valid ordering
    users = [i for i, m in enumerate(full) if isinstance(m, HumanMessage)]
    if users:
        assert full[users[-1]].id in ids  # the newest user message is always there
        assert isinstance(body[0], HumanMessage)
    gaps = [b for a, b in itertools.pairwise(positions) if b != a + 1]
    assert len(gaps) <= 1 and (not gaps or view.elided)  # contiguous, but for an elided turn middle
    if body:
        assert positions[-1] == len(full) - 1 or view.elided or positions[-1] >= users[-1]
    assert_provider_valid(messages)
    for message in messages:
        if message.response_metadata.get("session_graph", {}).get("truncated"):
            assert message.id in view.truncated


@SETTINGS
@given(
    system=TEXT,
    history=st.lists(turn(), min_size=1, max_size=8),
    budget=st.sampled_from([60, 120, 300, 1000]),
    resize=st.booleans(),
    mode=st.sampled_from(["lite", "summary"]),
    summary_words=st.sampled_from([1, 30, 400]),
)
def test_views_keep_every_invariant(
    system: str, history: list[list[BaseMessage]], budget: int, resize: bool, mode: str, summary_words: int
) -> None:
    def summarize(summary: str, messages: list[BaseMessage], settings: Any) -> str:  # of any size, over its budget too
        return "Overview: x\nFacts:\n" + "\n".join(f"- {len(messages)} more {i}" for i in range(summary_words))

    session = Session(summary_handler=summarize)
    session.configure(mode=mode, limit={"tokens": budget})
    session.set_settings("session.summary.reserve_tokens", 20)
    session.append_message(SystemMessage(content=system))
    appended = [session.full_chat_history[0]]
    for messages in history:
        for message in messages:
            session.append_message(message)
            appended.append(session.full_chat_history[-1])
            if len(appended) % 3 == 0:
                check_view(session, appended, budget)  # views between appends extend the last one
        if resize:
            session.resize()
            assert session.judge_resize() is None or session.window_totals.count == session.window_totals.tail_count
        check_view(session, appended, budget)


@SETTINGS
@given(
    system=st.text(alphabet="abc ", max_size=30),
    exchanges=st.lists(st.tuples(TEXT, TEXT), min_size=1, max_size=15),
    extra_user=TEXT,
    budget=st.integers(80, 600),
    encoding=st.sampled_from(["cl100k_base", "o200k_base"]),
)
def test_the_window_equals_trim_messages_on_tool_free_histories(
    system: str, exchanges: list[tuple[str, str]], extra_user: str, budget: int, encoding: str
) -> None:
    session = Session().configure(limit={"tokens": budget})
    session.set_settings("session.tokens.encoding", encoding)
    session.append_message(SystemMessage(content=system))
    for user, reply in exchanges:
        session.append_message(HumanMessage(content=user))
        session.append_message(AIMessage(content=reply))
    session.append_message(HumanMessage(content=extra_user))
    counter = session.counter
    newest_turn = message_tokens(session.full_chat_history[-1], counter)
    if message_tokens(session.full_chat_history[0], counter) + newest_turn + 3 > budget:
        return  # the newest turn must fit: there the view truncates, trim_messages drops it
    expected = trim_messages(
        session.full_chat_history,
        max_tokens=budget - 3,
        token_counter=lambda messages: sum(message_tokens(m, counter) for m in messages),
        strategy="last",
        start_on="human",
        include_system=True,
    )
    assert [m.id for m in session.view().messages] == [m.id for m in expected]


@pytest.mark.parametrize("seed", range(8))
def test_views_after_prunes_equal_a_full_build(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """The view carried across prunes (the window lost its oldest messages, a system prompt
    pinned at the front or not) is the view built anew; and it is carried, not rebuilt."""
    rng = random.Random(seed)
    session = Session().configure(limit={"tokens": rng.choice([300, 800, 2000])}, every_n_turns=rng.choice([0, 3]))
    if seed % 2 == 0:
        session.append_message(SystemMessage(content="be brief"))
    builds = []
    real_build = view_builder.build_with_tail
    monkeypatch.setattr(view_builder, "build_with_tail", lambda *args: builds.append(1) or real_build(*args))

    def same_as_a_full_build() -> None:
        view = session.view()
        full = real_build(session.state, session._ledger, session.settings.resolved(), 0)[0]  # not counted
        assert [m.id for m in view.messages] == [m.id for m in full.messages]
        assert (view.tokens, view.truncated, view.elided) == (full.tokens, full.truncated, full.elided)

    for turn_number in range(300):
        words = " ".join(rng.choice(["alpha", "beta", "gamma", "delta"]) for _ in range(rng.randint(1, 90)))
        session.append_message(HumanMessage(content=f"q{turn_number} {words}"))
        if rng.random() < 0.3:  # a tool turn, viewed while its calls run (answered as cancelled) and after
            calls = [f"c{turn_number}", f"d{turn_number}"][: rng.randint(1, 2)]
            session.append_message(AIMessage(content="", tool_calls=[{"id": c, "name": "f", "args": {}} for c in calls]))
            for call in calls:
                if rng.random() < 0.5:
                    same_as_a_full_build()
                session.append_message(ToolMessage(content=words[::-1], tool_call_id=call))
        session.append_message(AIMessage(content=f"a{turn_number} {words[: rng.randint(1, 200)]}"))
        if session.judge_resize():
            session.resize()
        same_as_a_full_build()
    if session.settings.get("session.limit")["tokens"] >= 800:  # at 300 a view shows one turn: rebuilding it is as cheap
        assert len(builds) < 0.1 * 300, f"{len(builds)} full builds in 300 turns"  # extended or rebased otherwise
