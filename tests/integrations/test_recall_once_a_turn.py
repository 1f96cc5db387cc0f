"""Automatic recall searches once per question and evicted span: the turn's later model calls
(after a tool call and its results joined the window) reuse it; a new question, a memo edit,
a further eviction or new settings search again."""

from __future__ import annotations

import asyncio
from typing import Any

from agents_util import lookup, model
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
import pytest
from recall_util import fold_away

from session_graph import Session
from session_graph.integrations import SessionMiddleware, session_node, session_pre_model_hook
from session_graph.integrations.history_recall import RECALL_HEADER, HistoryRecall, recall_text
import session_graph.integrations.middleware as middleware_module
import session_graph.integrations.node as node_module

FACT = "My passport number ends in 4417 and it expires in June."


def _counted(session: Session, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    queries: list[str] = []
    search = session.search

    def counting(query: str, *args: Any, **kwargs: Any) -> Any:
        queries.append(query)
        return search(query, *args, **kwargs)

    monkeypatch.setattr(session, "search", counting)
    return queries


def _folded() -> Session:
    session = Session(memo_update_handler=lambda memo, messages, attachments, settings: {"topics": ["travel"]})
    session.configure(mode="memo")
    return fold_away(session, [{"role": "user", "content": FACT}, {"role": "assistant", "content": "Noted."}],
                     "When does my passport expire?", 8, talk="small talk {i} about the weather")


def test_a_turns_later_model_call_reuses_the_recall(monkeypatch: pytest.MonkeyPatch) -> None:
    session = _folded()
    queries = _counted(session, monkeypatch)
    recall = HistoryRecall()
    first = recall_text(session, recall)
    assert RECALL_HEADER in first and "4417" in first
    session.append_message(AIMessage(content="", tool_calls=[{"id": "c1", "name": "lookup", "args": {"q": "passport"}}], id="a1"))
    session.append_message(ToolMessage(content="passport office: open 9-5", tool_call_id="c1", id="t1"))
    assert recall_text(session, recall) == first  # the same question and evicted span: no second search
    assert len(queries) == 1


@pytest.mark.parametrize("change", ["question", "memo", "eviction", "settings", "config"])
def test_what_decides_the_recall_searches_again(change: str, monkeypatch: pytest.MonkeyPatch) -> None:
    session = _folded()
    queries = _counted(session, monkeypatch)
    recall = HistoryRecall()
    first = recall_text(session, recall)
    assert len(queries) == 1
    if change == "question":
        session.append_message(AIMessage(content="In June.", id="r1"))
        session.append_message(HumanMessage(content="And the passport number?", id="h2"))
    elif change == "memo":
        session.memo["facts"] = [FACT]  # an edit in place: the memo holds the fact now
    elif change == "eviction":
        for i in range(4):
            session.append_message({"role": "user", "content": f"more talk {i}"})
            session.append_message({"role": "assistant", "content": f"more reply {i}"})
        session.resize(force=True)
        session.append_message(HumanMessage(content="When does my passport expire?", id="h3"))
    elif change == "settings":
        session.set_settings("session.limit", {"messages": 8})
    else:
        recall = HistoryRecall(k=2)
    again = recall_text(session, recall)
    assert len(queries) == 2
    if change == "memo":
        assert "4417" in first and "4417" not in again  # what the memo already says is not recalled


def test_an_async_agent_searches_once_a_turn_and_hops_to_a_thread_only_to_search(monkeypatch: pytest.MonkeyPatch) -> None:
    session = _folded()
    session.set_settings("session.limit", {"messages": 12})  # room for the turn: no resize between its model calls
    queries = _counted(session, monkeypatch)
    hops: list[Any] = []
    real = asyncio.to_thread

    async def counted(fn: Any, *args: Any, **kwargs: Any) -> Any:
        hops.append(getattr(fn, "__name__", fn))
        return await real(fn, *args, **kwargs)

    monkeypatch.setattr(middleware_module.asyncio, "to_thread", counted)
    fake = model()
    agent = create_agent(fake, tools=[lookup], middleware=[SessionMiddleware(session)])
    asyncio.run(agent.ainvoke({"messages": [HumanMessage(content="When does my passport expire?")]}))
    assert len(fake.prompts) == 2 and all("4417" in prompt[0].text for prompt in fake.prompts)  # both calls see the recall
    assert len(queries) == 1 and hops.count("_recalled") == 1  # the second call's answer was known: no search, no hop


@pytest.mark.parametrize("plug", ["node", "pre_model_hook"])
def test_the_async_node_and_hook_hop_to_a_thread_only_to_search(plug: str, monkeypatch: pytest.MonkeyPatch) -> None:
    hops: list[Any] = []
    real = asyncio.to_thread

    async def counted(fn: Any, *args: Any, **kwargs: Any) -> Any:
        hops.append(fn)
        return await real(fn, *args, **kwargs)

    monkeypatch.setattr(node_module.asyncio, "to_thread", counted)
    make = session_node if plug == "node" else session_pre_model_hook
    quiet = make(Session().use_lite(messages=50))  # lite: recall off, nothing to search
    asyncio.run(quiet.ainvoke({"messages": [HumanMessage(content="hi", id="h1")]}))
    assert hops == []
    folded = _folded()
    recalling = make(folded)
    out = asyncio.run(recalling.ainvoke({"messages": [HumanMessage(content="When does my passport expire?", id="h9")]}))
    shown = out["messages"].value if plug == "node" else out["llm_input_messages"]
    assert len(hops) == 1 and any("4417" in m.text for m in shown)  # a search: in a thread, as before


@pytest.mark.parametrize("change", ["memo", "settings"])
def test_a_change_made_while_the_search_runs_is_not_taken_as_searched(change: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Recall runs outside the step's lock (in a thread, beside another run's step on the session):
    what decides the answer is taken before the search, so a memo or settings change made during
    it makes the next model call search again instead of reusing an answer made without it."""
    session = _folded()
    search = session.search
    queries: list[str] = []

    def racing(query: str, *args: Any, **kwargs: Any) -> Any:
        queries.append(query)
        hits = search(query, *args, **kwargs)
        if len(queries) == 1:  # another run's step, mid-search: the fact folded into the memo, or new settings
            if change == "memo":
                session.memo["facts"] = [FACT]
            else:
                session.set_settings("session.limit", {"messages": 8})
        return hits

    monkeypatch.setattr(session, "search", racing)
    recall = HistoryRecall()
    first = recall_text(session, recall)
    assert "4417" in first  # made before the change
    again = recall_text(session, recall)
    assert len(queries) == 2  # searched again: the first answer was made from what is no longer so
    if change == "memo":
        assert "4417" not in again  # what the memo says now is left out
