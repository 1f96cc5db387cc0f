"""Recall for agents: the search_history tool (within its budget, per tenant) and automatic
recall of evicted messages on every plug point (middleware, node, pre-model hook)."""

from __future__ import annotations

from pathlib import Path

from agents_util import lookup, model
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage
from langgraph.checkpoint.memory import InMemorySaver
import pytest
from recall_util import fold_away

from session_graph import Session, SessionManager
from session_graph.errors import ConfigurationError
from session_graph.integrations import SessionMiddleware, session_node, session_pre_model_hook
from session_graph.integrations.binding import SessionBinding
from session_graph.integrations.history_recall import (
    RECALL_HEADER,
    HistoryRecall,
    format_hits,
    history_tools,
    recall_view,
)
from session_graph.retrieval.hits import SearchHit

FACT = "My passport number ends in 4417 and it expires in June."


def folded(mode: str = "memo") -> Session:
    """A session whose window no longer holds the fact (folded into a memo that did not keep it)."""
    session = Session(memo_update_handler=lambda memo, messages, attachments, settings: {"topics": ["travel"]},
                      summary_handler=lambda summary, messages, settings: "We talked about travel and small talk about the weather.")
    session.configure(mode=mode) if mode != "lite" else None
    return fold_away(session, [{"role": "user", "content": FACT}, {"role": "assistant", "content": "Noted."}],
                     "When does my passport expire?", 8, talk="small talk {i} about the weather")


def test_automatic_recall_puts_the_evicted_fact_into_the_context_message() -> None:
    session = folded("memo")
    view = recall_view(session, HistoryRecall())
    context = next(m for m in view if isinstance(m, SystemMessage) and "Memo of the earlier" in m.text)
    assert RECALL_HEADER.strip() in context.text and "4417" in context.text
    assert sum(RECALL_HEADER.strip() in m.text for m in view) == 1  # joined to the memo message, not added
    window_ids = {m.id for m in session.current_chat_history}
    recalled = context.text.split(RECALL_HEADER)[1]
    assert not any(m.text in recalled for m in session.current_chat_history if m.id in window_ids and m.text.strip())


def test_recall_is_off_in_lite_mode_unless_asked_and_off_when_none() -> None:
    session = folded("lite")
    assert recall_view(session, HistoryRecall()) == list(session.view().messages)
    assert any("4417" in m.text for m in recall_view(session, HistoryRecall(lite=True)) if isinstance(m, SystemMessage))
    assert recall_view(session, None) == list(session.view().messages)
    with pytest.raises(ConfigurationError, match=r"HistoryRecall\.k"):
        HistoryRecall(k=-1)


def test_recall_stays_within_the_token_budget() -> None:
    session = folded("memo")
    session.set_settings("session.limit", {"messages": 6, "tokens": 220})
    view = recall_view(session, HistoryRecall(chars=4000))
    assert sum(session.tokens_of(m) for m in view) <= 220
    assert any("4417" in m.text for m in view)


def test_format_hits_never_passes_its_budget() -> None:
    near = (SearchHit("k", 0, "user", "before " * 30, "2024-03-01T10:00:00Z"),)
    hits = [SearchHit("k", i, "user", f"hit {i} " + "long text " * 50, "2024-03-01T10:00:00Z", f"m{i}", 1.0, near) for i in range(1, 9)]
    for budget in (0, 10, 60, 150, 400, 1000, 3000):
        text = format_hits(hits, budget)
        assert len(text) <= budget
    assert "[k#1 2024-03-01 10:00] user: \"hit 1" in format_hits(hits, 3000)


def test_search_history_tool_across_sessions_within_budget_and_tenant(tmp_path: Path) -> None:
    mine, other = SessionManager(tmp_path / "j", tenant="alice"), SessionManager(tmp_path / "j", tenant="bob")
    for manager, owner in ((mine, "alice"), (other, "bob")):
        for key in ("a", "b"):
            session = manager.get_or_create(key)
            session.append_message({"role": "user", "content": f"{owner} talks about passport renewal in session {key}"})
            session.append_message({"role": "assistant", "content": "ok " * 200})
            manager.save(session)
    (tool,) = history_tools(SessionBinding(manager=mine), HistoryRecall(tool_chars=400))
    out = tool.invoke({"query": "passport renewal", "k": 5})
    assert len(out) <= 400 and "alice talks" in out and "bob talks" not in out and "a#0" in out and "b#0" in out
    only_b = tool.invoke({"query": "passport renewal", "session": "b"})
    assert "b#0" in only_b and "a#0" not in only_b
    assert tool.invoke({"query": "passport", "since": "2999-01-01"}) == "No earlier message matches."
    assert tool.invoke({"query": "passport", "since": "not a date"}).startswith("Search failed")


def test_middleware_gives_the_model_recalled_messages_and_the_tool() -> None:
    session = folded("memo")
    assert SessionMiddleware(Session()).tools == []  # the tool is opt-in: a model that cannot bind tools still works
    middleware = SessionMiddleware(session, history=HistoryRecall(tool=True))
    assert [t.name for t in middleware.tools] == ["search_history"]
    llm = model(iter([AIMessage(content="In June.")]))
    agent = create_agent(llm, tools=[lookup, *middleware.tools], middleware=[middleware], checkpointer=InMemorySaver(),
                         system_prompt="You are helpful.")
    agent.invoke({"messages": [HumanMessage(content="Remind me: when does my passport expire?")]},
                 {"configurable": {"thread_id": "t"}})
    system = llm.prompts[-1][0].text
    assert system.startswith("You are helpful.") and "4417" in system
    assert not any("Earlier messages" in m.text for m in session.full_chat_history)  # never recorded
    assert SessionMiddleware(Session(), history=None).tools == []


@pytest.mark.parametrize("plug", ["node", "hook"])
def test_node_and_pre_model_hook_recall(plug: str) -> None:
    session = folded("summary")
    messages = [HumanMessage(content="When does my passport expire?", id="q-new")]
    config = {"configurable": {"thread_id": "t"}}
    if plug == "node":
        out = session_node(session).invoke({"messages": messages}, config)["messages"].value
    else:
        out = session_pre_model_hook(session).invoke({"messages": messages}, config)["llm_input_messages"]
    context = next(m for m in out if isinstance(m, SystemMessage) and "Summary of the earlier" in m.text)
    assert "4417" in context.text
    again = session_node(session).invoke({"messages": out}, config)["messages"].value  # the view fed back is not recorded
    assert sum("Earlier messages" in m.text for m in session.full_chat_history) == 0 and again
