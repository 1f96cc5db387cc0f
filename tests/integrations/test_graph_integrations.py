"""The session as a LangGraph node, as a pre-model hook, and the agent glue."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from agents_util import lookup, model
from langchain.agents import create_agent
from langchain_core.language_models.fake_chat_models import FakeListChatModel
from langchain_core.messages import AIMessage, HumanMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition
import pytest

from session_graph import ConfigurationError, Session
from session_graph.integrations import attach_session, detach_session, get_session, session_node, session_pre_model_hook


def hand_built(session: Session, llm: Any) -> Any:
    def call_model(state: MessagesState) -> dict[str, Any]:
        return {"messages": [llm.invoke(session.view().messages)]}

    builder = StateGraph(MessagesState)
    builder.add_node("session", session_node(session, goto="model"), destinations=("model",))
    builder.add_node("model", call_model)
    builder.add_node("tools", ToolNode([lookup]))
    builder.add_edge(START, "session")
    builder.add_conditional_edges("model", tools_condition, {"tools": "tools", END: END})
    builder.add_edge("tools", "session")
    return builder.compile(checkpointer=InMemorySaver())


def test_a_session_node_really_shrinks_the_parent_graph() -> None:
    session = Session().use_lite(messages=6)
    llm = model()
    graph = hand_built(session, llm)
    cfg = {"configurable": {"thread_id": "t"}}
    for turn in range(8):
        graph.invoke({"messages": [HumanMessage(content=f"q{turn}")]}, cfg)
    state = graph.get_state(cfg).values["messages"]
    assert len(session.full_chat_history) == 31  # the last reply is recorded at the node's next run
    assert len(state) <= 7 and [m.id for m in state][: len(session.current_chat_history)] == [m.id for m in session.current_chat_history]
    assert all(len(prompt) <= 7 for prompt in llm.prompts)


def test_the_routes_and_the_nested_resize_graph_are_drawn() -> None:
    graph = hand_built(Session(), model())
    drawing = graph.get_graph().draw_mermaid()
    assert "session --> model" in drawing.replace("\t", "") or "session -.-> model" in drawing
    nested = graph.get_graph(xray=True).draw_mermaid()
    for node in ("judge", "memo_update", "lite_prune", "deep_chunk"):
        assert f"session\\3a{node}" in nested
    assert "subgraph session" in nested


@pytest.mark.filterwarnings("ignore:create_react_agent has been moved")  # the older prebuilt agent, on purpose
def test_the_prebuilt_agent_pre_model_hook() -> None:
    from langgraph.prebuilt import create_react_agent

    session = Session(memo_update_handler=lambda memo, messages, attachments, settings: {"seen": len(messages)}).use_memo(messages=4)
    llm = model()
    agent = create_react_agent(llm, [lookup], pre_model_hook=session_pre_model_hook(session), checkpointer=InMemorySaver())
    cfg = {"configurable": {"thread_id": "t"}}
    for turn in range(4):
        agent.invoke({"messages": [HumanMessage(content=f"q{turn}")]}, cfg)
    assert len(session.full_chat_history) >= 13
    assert len(agent.get_state(cfg).values["messages"]) <= len(session.current_chat_history) + 1
    assert "Memo of the earlier conversation" in llm.prompts[-1][0].content


def test_glue_with_a_create_agent() -> None:
    llm = model()
    agent = create_agent(llm, tools=[lookup])
    session = Session(memo_update_handler=lambda memo, messages, attachments, settings: {"topics": len(messages)}).use_memo(messages=4)
    attached = attach_session(agent, session)
    assert get_session(attached) is session
    for turn in range(3):
        attached.invoke(f"question {turn}")
    kinds = [m.type for m in session.full_chat_history]
    assert kinds[:4] == ["human", "ai", "tool", "ai"] and len(kinds) == 12
    assert any("Memo of the earlier conversation" in str(m.content) for m in llm.prompts[-1])  # the memo is shown
    assert detach_session(attached) is agent and get_session(agent) is None


def test_glue_with_a_plain_callable_and_the_history_proxies() -> None:
    seen: list[list[Any]] = []

    def echo(messages: list[Any]) -> AIMessage:
        seen.append(messages)
        return AIMessage(content=f"echo: {messages[-1].content}")

    attached = attach_session(echo, mode="lite")
    attached.set_chat_history([{"role": "user", "content": "old"}, {"role": "assistant", "content": "older"}])
    attached.add_chat_history({"role": "user", "content": "added"})
    reply = attached.invoke("new")
    assert reply.content == "echo: new"
    assert [m.content for m in attached.session.full_chat_history] == ["old", "older", "added", "new", "echo: new"]
    assert [m.content for m in seen[0]] == ["old", "older", "added", "new"]
    attached.reset_chat_history()
    assert attached.session.full_chat_history == []
    with pytest.raises(ConfigurationError, match="already has a session"):
        attach_session(attached)


def test_a_failed_request_leaves_the_session_exactly_as_it_was() -> None:
    def flaky(messages: list[Any]) -> AIMessage:
        raise TimeoutError("agent timed out")

    session = Session()
    session.append_message({"role": "user", "content": "before"})
    before = session.to_json()
    attached = attach_session(flaky, session)
    with pytest.raises(TimeoutError):
        attached.invoke("this fails")
    assert session.to_json() == before


def test_glue_async() -> None:
    memo_model = FakeListChatModel(responses=[json.dumps({"memo": {"k": "v"}})] * 10)
    agent = create_agent(model(), tools=[lookup])
    attached = attach_session(agent, Session(model=memo_model).use_memo(messages=2))

    async def run() -> None:
        for turn in range(2):
            await attached.ainvoke({"messages": [HumanMessage(content=f"q{turn}")]})

    asyncio.run(run())
    assert attached.session.memo_for_model == {"k": "v"} and len(attached.session.full_chat_history) == 8
