"""SessionMiddleware beside other ``wrap_model_call`` middleware: what they write in the model's
step (an edited reply, a message of their own, a command that overwrites ``messages``) reaches
the agent's state as it would without the session; the session cuts only the messages it holds."""

from __future__ import annotations

import asyncio
from typing import Any

from agents_util import lookup, model
from langchain.agents import create_agent
from langchain.agents.middleware import AgentMiddleware, ExtendedModelResponse, ModelResponse
from langchain_core.messages import AIMessage, HumanMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command, Overwrite
import pytest

from session_graph import Session
from session_graph.integrations import SessionMiddleware

CONFIG = {"configurable": {"thread_id": "t1"}}


class Redact(AgentMiddleware):
    """A guardrail around the model: rewrites every reply (same id)."""

    @staticmethod
    def _redacted(response: ModelResponse) -> ModelResponse:
        return ModelResponse(result=[m.model_copy(update={"content": str(m.content).replace("answer", "[redacted]")})
                                     for m in response.result])

    def wrap_model_call(self, request: Any, handler: Any) -> ModelResponse:
        return self._redacted(handler(request))

    async def awrap_model_call(self, request: Any, handler: Any) -> ModelResponse:
        return self._redacted(await handler(request))


class Note(AgentMiddleware):
    """Adds a message of its own to the state through the model step's command."""

    def wrap_model_call(self, request: Any, handler: Any) -> ExtendedModelResponse:
        response = handler(request)
        note = AIMessage(content="note from a middleware", id=f"note-{len(request.state['messages'])}")
        return ExtendedModelResponse(model_response=response, command=Command(update={"messages": [note]}))


class Overwriting(AgentMiddleware):
    """Sets ``messages`` itself with an Overwrite in the model step (the state and the reply)."""

    def wrap_model_call(self, request: Any, handler: Any) -> ExtendedModelResponse:
        response = handler(request)
        kept = Overwrite([*request.state["messages"], *response.result])
        return ExtendedModelResponse(model_response=response, command=Command(update={"messages": kept}))


def test_a_reply_edited_by_a_middleware_outside_is_what_the_user_gets() -> None:
    agent = create_agent(model(), tools=[lookup], middleware=[Redact(), SessionMiddleware(Session())],
                         checkpointer=InMemorySaver())
    result = agent.invoke({"messages": [HumanMessage(content="q0")]}, CONFIG)
    assert [m.content.split(" ")[0] for m in result["messages"]] == ["[redacted]"]
    result = asyncio.run(agent.ainvoke({"messages": [HumanMessage(content="q1")]}, CONFIG))
    assert [m.content.split(" ")[0] for m in result["messages"]] == ["[redacted]"]


@pytest.mark.parametrize("inside", [True, False], ids=["inside", "outside"])
def test_a_message_another_middleware_adds_is_kept_and_then_recorded(inside: bool) -> None:
    session = Session()
    middleware = [SessionMiddleware(session), Note()] if inside else [Note(), SessionMiddleware(session)]
    agent = create_agent(model(), tools=[lookup], middleware=middleware, checkpointer=InMemorySaver())
    result = agent.invoke({"messages": [HumanMessage(content="q0")]}, CONFIG)
    assert [m.content for m in result["messages"]][-1] == "note from a middleware"
    assert result["messages"][0].tool_calls  # the model's reply, then the note
    agent.invoke({"messages": [HumanMessage(content="q1")]}, CONFIG)
    assert "note from a middleware" in [m.content for m in session.full_chat_history]


def test_a_middleware_that_overwrites_messages_too_does_not_fail_the_run() -> None:
    session = Session()
    agent = create_agent(model(), tools=[lookup], middleware=[SessionMiddleware(session), Overwriting()],
                         checkpointer=InMemorySaver())
    result = agent.invoke({"messages": [HumanMessage(content="q0")]}, CONFIG)
    assert result["messages"][-1].content.startswith("answer 0")
    assert [m.type for m in session.full_chat_history] == ["human", "ai", "tool", "ai"]


def test_a_malformed_tool_call_left_in_the_state_is_cut_with_the_rest() -> None:
    session = Session()
    bad = AIMessage(content="", invalid_tool_calls=[{"id": "bad1", "name": "lookup", "args": "{oops", "error": "bad json",
                                                     "type": "invalid_tool_call"}])
    agent = create_agent(model(iter([bad, AIMessage(content="fine")])), tools=[lookup],
                         middleware=[SessionMiddleware(session)], checkpointer=InMemorySaver())
    agent.invoke({"messages": [HumanMessage(content="q0")]}, CONFIG)
    result = agent.invoke({"messages": [HumanMessage(content="q1")]}, CONFIG)  # LangChain answers the bad call in this step
    assert [m.content for m in result["messages"]] == ["fine"]
    assert [m.type for m in session.full_chat_history] == ["human", "ai", "human", "ai"]


def test_a_structured_answer_ends_the_turn_and_is_written(tmp_path) -> None:
    from langchain.agents.structured_output import ToolStrategy
    from pydantic import BaseModel

    from session_graph import SessionManager

    class Answer(BaseModel):
        text: str

    manager = SessionManager(tmp_path)
    replies = iter([AIMessage(content="", tool_calls=[{"id": "s1", "name": "Answer", "args": {"text": "hello"}}])])
    agent = create_agent(model(replies), tools=[lookup], middleware=[SessionMiddleware(manager=manager)],
                         response_format=ToolStrategy(Answer))  # no checkpointer: the store is all there is
    result = agent.invoke({"messages": [HumanMessage(content="q0")]}, CONFIG)
    assert result["structured_response"] == Answer(text="hello")
    stored = SessionManager(tmp_path).get("t1")  # another process reads the turn's end
    assert [m.type for m in stored.full_chat_history] == ["human", "ai", "tool"]


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_a_run_that_ends_in_the_tools_node_is_stored(tmp_path, mode: str) -> None:
    from langchain_core.tools import tool

    from session_graph import SessionManager

    @tool(return_direct=True)
    def final(topic: str) -> str:
        """Answer the user directly."""
        return f"direct answer about {topic}"

    manager = SessionManager(tmp_path)
    replies = iter([AIMessage(content="", tool_calls=[{"id": "f1", "name": "final", "args": {"topic": "x"}}])])
    agent = create_agent(model(replies), tools=[final], middleware=[SessionMiddleware(manager=manager)])  # no checkpointer
    request = {"messages": [HumanMessage(content="q0")]}
    result = agent.invoke(request, CONFIG) if mode == "sync" else asyncio.run(agent.ainvoke(request, CONFIG))
    assert result["messages"][-1].content == "direct answer about x"
    assert [m.type for m in SessionManager(tmp_path).get("t1").full_chat_history] == ["human", "ai", "tool"]


@pytest.mark.parametrize("session_first", [True, False], ids=["session-first", "summarization-first"])
def test_langchains_summary_message_is_never_recorded_as_the_users(session_first: bool) -> None:
    from langchain.agents.middleware import SummarizationMiddleware
    from langchain_core.language_models.fake_chat_models import FakeListChatModel

    session = Session()
    summarize = SummarizationMiddleware(model=FakeListChatModel(responses=["SUMMARY"] * 10), trigger=("tokens", 20),
                                        keep=("messages", 1))
    middleware = [SessionMiddleware(session), summarize] if session_first else [summarize, SessionMiddleware(session)]
    agent = create_agent(model(), tools=[lookup], middleware=middleware, checkpointer=InMemorySaver())
    for turn in range(2):  # the second turn's state (the last answer, the new input) is over the trigger
        agent.invoke({"messages": [HumanMessage(content=f"q{turn} " + "long text " * 30)]}, CONFIG)
    assert [m.content.split(" ")[0] for m in session.full_chat_history if m.type == "human"] == ["q0", "q1"]
    assert [m.type for m in session.full_chat_history] == ["human", "ai", "tool", "ai"] * 2


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_parallel_tool_calls_are_stored_once_after_their_call(tmp_path, mode: str) -> None:
    from langchain.agents.middleware import ToolRetryMiddleware
    from langchain_core.tools import tool

    from session_graph import SessionManager

    @tool(return_direct=True)
    def final(topic: str) -> str:
        """Answer the user directly."""
        return f"direct answer about {topic}"

    @tool(return_direct=True)
    def broken(topic: str) -> str:
        """Always fails."""
        raise ValueError(f"no {topic}")

    calls = [{"id": "f1", "name": "final", "args": {"topic": "x"}}, {"id": "f2", "name": "final", "args": {"topic": "y"}},
             {"id": "b1", "name": "broken", "args": {"topic": "z"}}]
    manager = SessionManager(tmp_path)
    agent = create_agent(model(iter([AIMessage(content="", tool_calls=calls)])), tools=[final, broken],
                         middleware=[SessionMiddleware(manager=manager), ToolRetryMiddleware(max_retries=1, initial_delay=0)])
    request = {"messages": [HumanMessage(content="q0")]}
    agent.invoke(request, CONFIG) if mode == "sync" else asyncio.run(agent.ainvoke(request, CONFIG))
    stored = SessionManager(tmp_path).get("t1").full_chat_history
    assert [m.type for m in stored] == ["human", "ai", "tool", "tool", "tool"]
    assert sorted(m.tool_call_id for m in stored[2:]) == ["b1", "f1", "f2"]
    assert "no z" in next(m.content for m in stored if getattr(m, "tool_call_id", None) == "b1")
