"""A session deep-copied or pickled after agent turns (tool calls, parallel calls, resizes in the
model hook) is a working session: it takes the next turn as the original does, resizes alike, and
saves and reloads equal. (A copy's arrival stamps came back a plain dict, ``Arrivals.__reduce__``
and ``__deepcopy__``'s answer for ``session.arrived_at`` copied alone: the copy's first append
raised ``AttributeError: 'dict' object has no attribute 'base'``.)"""

from __future__ import annotations

import copy
from pathlib import Path
import pickle
from typing import Any

from agents_util import ToolCallingFake, counted_session, lookup
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
import pytest

from session_graph import Session, SessionManager
from session_graph.integrations import SessionMiddleware


def _replies(turns: int) -> Any:
    for i in range(turns):
        calls = [{"id": f"c{i}_{k}", "name": "lookup", "args": {"topic": f"t{i}{k}"}} for k in range(2)]
        yield AIMessage(content="", tool_calls=calls, id=f"r{i}")
        yield AIMessage(content=f"answer {i} " + "word " * 20, id=f"a{i}")



def _after_turns(tmp_path: Path, factory: Any = lambda key: Session(key).use_lite(chars=300)) -> Session:
    manager = SessionManager(tmp_path / "agent", session_factory=factory)
    agent = create_agent(ToolCallingFake(messages=_replies(4)), tools=[lookup], middleware=[SessionMiddleware(manager=manager)])
    for turn in range(4):
        agent.invoke({"messages": [HumanMessage(content=f"question {turn} " + "x " * 30, id=f"q{turn}")]},
                     {"configurable": {"thread_id": "t1"}})
    session = manager.get("t1")
    assert session is not None and session.resize_events  # resized in the model hook
    return session


def _next_turn(session: Session) -> None:
    session.append_message(HumanMessage(content="next " * 30, id="q-next"))
    session.append_message(AIMessage(content="", tool_calls=[{"id": "c-next", "name": "lookup", "args": {}}], id="r-next"))
    session.append_message(ToolMessage(content="facts " * 20, tool_call_id="c-next", id="t-next"))
    session.resize()


def _shape(session: Session, stamps: bool = True) -> tuple[Any, ...]:
    arrived = dict(session.arrived_at) if stamps else sorted(session.arrived_at)  # the next turn's: appended apart, not equal
    return ([m.id for m in session.full_chat_history], [m.id for m in session.current_chat_history], session.window_totals,
            session.memo, arrived)


@pytest.mark.parametrize("counted", [False, True], ids=["chars", "tiktoken"])
@pytest.mark.parametrize("how", ["deepcopy", "pickle"])
def test_a_copied_session_takes_the_next_turn_as_the_original(tmp_path: Path, how: str, counted: bool) -> None:
    original = _after_turns(tmp_path, counted_session) if counted else _after_turns(tmp_path)
    made = copy.deepcopy(original) if how == "deepcopy" else pickle.loads(pickle.dumps(original))
    assert _shape(made) == _shape(original)
    _next_turn(made)
    _next_turn(original)
    assert _shape(made, False) == _shape(original, False)
    assert len(made.resize_events) == len(original.resize_events)
    recounted = Session.from_json(made.to_json())  # every message measured afresh
    assert recounted.window_totals == made.window_totals and (made.window_totals.tokens > 0) is counted
    manager = SessionManager(tmp_path / how)
    manager.save(made)
    reloaded = SessionManager(tmp_path / how).get(made.id)
    assert reloaded is not None and _shape(reloaded)[:4] == _shape(made)[:4]
    stamps = dict(reloaded.arrived_at)  # a lazy load's: the window's and the first message's
    assert stamps and stamps == {key: made.arrived_at[key] for key in stamps}


@pytest.mark.parametrize("how", ["deepcopy", "pickle"])
def test_a_session_loaded_from_its_store_copies(tmp_path: Path, how: str) -> None:
    """A loaded session's history is lazy (its middle in the store, read with a lock and the store's
    reader, neither of which copies: deepcopy and pickle raised, on main too): copied read whole."""
    _after_turns(tmp_path)
    loaded = SessionManager(tmp_path / "agent").get("t1")  # another process's: its history's middle still in the store
    assert loaded is not None
    made = copy.deepcopy(loaded) if how == "deepcopy" else pickle.loads(pickle.dumps(loaded))
    assert _shape(made) == _shape(loaded)
    _next_turn(made)
    _next_turn(loaded)
    assert _shape(made, False) == _shape(loaded, False)
    manager = SessionManager(tmp_path / how)
    manager.save(made)
    reloaded = SessionManager(tmp_path / how).get(made.id)
    assert reloaded is not None and [m.id for m in reloaded.full_chat_history] == [m.id for m in made.full_chat_history]
