"""Inside an agent, a resize goes without Pregel only when nothing observes the agent's run:
a plain ``invoke`` (direct), a ``messages`` stream or callbacks (Pregel, whose runs they see)."""

from __future__ import annotations

from typing import Any

from agents_util import lookup, model
from langchain.agents import create_agent
from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.messages import HumanMessage
import pytest
from resize_util import executor_choices

from session_graph import Session
from session_graph.integrations import SessionMiddleware


@pytest.fixture
def chosen(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """Whether each resize's ``select`` chose the direct executor."""
    return executor_choices(monkeypatch)


def _agent() -> tuple[Session, Any]:
    session = Session().use_lite(chars=900)
    return session, create_agent(model(), tools=[lookup], middleware=[SessionMiddleware(session)], system_prompt="You are helpful.")


def _turns(agent: Any, run: str, config: dict[str, Any] | None = None) -> None:
    for turn in range(6):
        message = {"messages": [HumanMessage(content=f"question {turn}")]}
        if run == "invoke":
            agent.invoke(message, config)
        else:
            list(agent.stream(message, config, stream_mode=run))


def test_a_plain_agent_run_resizes_without_pregel(chosen: list[bool]) -> None:
    session, agent = _agent()
    _turns(agent, "invoke")
    assert len(session.trace) >= 2 and chosen == [True] * len(session.trace)


def test_an_updates_stream_is_no_observer(chosen: list[bool]) -> None:
    session, agent = _agent()
    _turns(agent, "updates")
    assert len(session.trace) >= 2 and all(chosen)


def test_a_messages_stream_or_callbacks_resize_through_pregel(chosen: list[bool]) -> None:
    session, agent = _agent()
    _turns(agent, "messages")  # LangGraph's messages handler is a callback of the agent's run
    assert len(session.trace) >= 2 and not any(chosen)
    chosen.clear()
    session, agent = _agent()
    _turns(agent, "invoke", {"callbacks": [BaseCallbackHandler()]})
    assert len(session.trace) >= 2 and not any(chosen)
