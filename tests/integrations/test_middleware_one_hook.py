"""SessionMiddleware is one hook (``wrap_model_call``): LangGraph runs no node of its own per
model call, the state is cut to the reply by the hook's command, and only a turn's first model
call looks the session up in the store (the step that records a reply, and a model call after
tool results, reuse the session the turn already holds)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from agents_util import lookup, model
from langchain.agents import create_agent
from langchain.agents.middleware import AgentMiddleware, ExtendedModelResponse, ModelResponse
from langchain_core.messages import AIMessage, HumanMessage, RemoveMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph.message import REMOVE_ALL_MESSAGES
import pytest

from session_graph import Session, SessionManager
from session_graph.integrations import SessionMiddleware
from session_graph.integrations import middleware as middleware_module
from session_graph.integrations.middleware import _flat, save_point
from session_graph.stores import JsonlStore


def test_the_agent_graph_has_no_node_of_the_middleware() -> None:
    agent = create_agent(model(), tools=[lookup], middleware=[SessionMiddleware(Session())])
    assert set(agent.get_graph().nodes) == {"__start__", "model", "tools", "__end__"}


def test_each_model_call_cuts_the_state_to_its_reply(tmp_path: Path) -> None:
    manager = SessionManager(tmp_path)
    agent = create_agent(model(), tools=[lookup], middleware=[SessionMiddleware(manager=manager)], checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "t1"}}
    seen = []
    for update in agent.stream({"messages": [HumanMessage(content="q0", id="q0")]}, config, stream_mode="values"):
        seen.append([m.type for m in update["messages"]])
    # the input; the tool call alone (the input is in the store); its result added; the answer alone
    assert seen == [["human"], ["ai"], ["ai", "tool"], ["ai"]]
    session = manager.get("t1")
    assert [m.type for m in session.full_chat_history] == ["human", "ai", "tool", "ai"]
    assert "session_key" not in agent.get_state(config).values  # the key comes from the run's config


def test_a_turn_looks_its_session_up_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    manager = SessionManager(tmp_path)
    agent = create_agent(model(), tools=[lookup], middleware=[SessionMiddleware(manager=manager)])
    config = {"configurable": {"thread_id": "t1"}}
    agent.invoke({"messages": [HumanMessage(content="q0")]}, config)
    looked_up: list[str] = []
    real = JsonlStore.version

    def version(self, tenant, key):
        looked_up.append(key)
        return real(self, tenant, key)

    monkeypatch.setattr(JsonlStore, "version", version)
    agent.invoke({"messages": [HumanMessage(content="q1")]}, config)
    assert looked_up == ["t1"]  # at the turn's start; none per reply, none after the tool result
    assert [m.content for m in manager.get("t1").full_chat_history if isinstance(m, HumanMessage)] == ["q0", "q1"]


def test_the_cut_is_a_command_only_when_something_needs_cutting() -> None:
    session = Session("k")
    reply = AIMessage(content="done", id="r")
    response = ModelResponse(result=[reply])
    # nothing held: the model's response as is, no command for LangGraph to apply
    assert _flat(session, SimpleNamespace(state={"messages": []}), response, [reply]) is response
    # the held input removed by id, nothing else written
    held = HumanMessage(content="q", id="q")
    cut = _flat(session, SimpleNamespace(state={"messages": [held]}), response, [reply])
    assert isinstance(cut, ExtendedModelResponse) and cut.model_response is response
    assert [(type(m), m.id) for m in cut.command.update["messages"]] == [(RemoveMessage, "q")]
    assert set(cut.command.update) == {"messages"}
    # a run without a checkpointer keeps nothing between runs: no cut, the state is a stock agent's
    assert _flat(session, SimpleNamespace(state={"messages": [held]}), response, [reply], cut=False) is response


@pytest.mark.parametrize("run", ["sync", "async"])
def test_without_a_checkpointer_the_result_holds_the_turn_as_a_stock_agent_s(run: str, tmp_path: Path) -> None:
    manager = SessionManager(tmp_path)
    durable: list[bool] = []
    save, asave = manager.save, manager.asave

    def counted(session: Any, **options: Any) -> Any:
        durable.append(options.get("durable", True))
        return save(session, **options)

    async def acounted(session: Any, **options: Any) -> Any:
        durable.append(options.get("durable", True))
        return await asave(session, **options)

    manager.save, manager.asave = counted, acounted  # type: ignore[method-assign]
    agent = create_agent(model(), tools=[lookup], middleware=[SessionMiddleware(manager=manager)])
    stock = create_agent(model(), tools=[lookup])
    config = {"configurable": {"thread_id": "t"}}
    for text in ("q0", "q1"):
        request = {"messages": [HumanMessage(content=text, id=f"in-{text}")]}
        ours = agent.invoke(request, config) if run == "sync" else asyncio.run(agent.ainvoke(request, config))
        theirs = stock.invoke(request) if run == "sync" else asyncio.run(stock.ainvoke(request))
        assert [m.type for m in ours["messages"]] == [m.type for m in theirs["messages"]] == ["human", "ai", "tool", "ai"]
        assert ours["messages"][0].id == f"in-{text}"
    # per turn: the input durable before the first model call (the human message the later model call
    # still sees in the uncut state is held by the session: no second durable save), the answer written
    assert durable == [True, False] * 2
    stored = manager.get("t").full_chat_history
    assert [m.type for m in stored] == ["human", "ai", "tool", "ai"] * 2  # each message recorded once
    assert len({m.id for m in stored}) == len(stored)


class _EmptiesTheState(AgentMiddleware):
    """Another middleware that empties the agent's messages before each model call (the one case
    where the model hook sees no message held: its reply then needs no command)."""

    def before_model(self, state: Any, runtime: Any) -> dict[str, Any]:
        return {"messages": [RemoveMessage(id=REMOVE_ALL_MESSAGES)]}

    async def abefore_model(self, state: Any, runtime: Any) -> dict[str, Any]:
        return self.before_model(state, runtime)


@pytest.mark.parametrize("run", ["sync", "async"])
def test_a_model_call_with_nothing_held_adds_its_reply_without_a_command_across_checkpointed_turns(
    run: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    returned: list[str] = []

    def flat(*args: Any, **options: Any) -> Any:
        result = _flat(*args, **options)
        returned.append(type(result).__name__)
        return result

    monkeypatch.setattr(middleware_module, "_flat", flat)
    session = Session("k")
    agent = create_agent(model(), tools=[lookup], middleware=[SessionMiddleware(session), _EmptiesTheState()],
                         checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "t"}}
    for text in ("q0", "q1"):
        request = {"messages": [HumanMessage(content=text)]}
        out = agent.invoke(request, config) if run == "sync" else asyncio.run(agent.ainvoke(request, config))
        assert [m.type for m in out["messages"]] == ["ai"]  # the turn's answer alone: the checkpoint stays one turn
    replies = [m for m in session.full_chat_history if m.type in ("ai", "tool")]
    assert [m.type for m in replies] == ["ai", "tool", "ai"] * 2  # each reply and result recorded once
    assert len({m.id for m in replies}) == len(replies)
    assert returned == ["ModelResponse"] * 4  # nothing held, no key to set: never a command


def test_a_turn_starts_at_a_human_message_the_session_does_not_hold_yet() -> None:
    session = Session("k")
    held = HumanMessage(content="q0", id="q0")
    session.append_message(held)
    call = AIMessage(content="", tool_calls=[{"id": "c", "name": "lookup", "args": {}}], id="a0")
    # a later model call of the turn, the state uncut (no checkpointer): its input is held, no second durable save
    assert save_point([held, call], session=session) == {"save": 2, "durable": False}
    # a new input, after the held history a caller passes again: the turn's durable save
    assert save_point([held, call, HumanMessage(content="q1", id="q1")], session=session) == {"save": True, "durable": True}
    # no session the run holds yet (a turn's start, or a session the manager let go): any human message starts one
    assert save_point([held], session=None) == {"save": True, "durable": True}
