"""The agent's input is durable before anything can fail, and concurrent runs lose nothing.

SessionMiddleware flattens the agent's checkpoint to the current turn, so once ``before_model``
ran, the session store is the only place the user's message lives. These tests fail the
model (an error, a cancellation) at the first and at a later call of a turn, then restart
(a new manager on the same directory, and a real second process), and check that every
message the agent accepted is stored exactly once. The last ones race N ``ainvoke`` on one
new thread and on an existing one.
"""

from __future__ import annotations

import asyncio
from collections import Counter
import contextlib
from pathlib import Path
import subprocess
import sys
import textwrap

from agents_util import lookup, model
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, HumanMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.sqlite import SqliteSaver
import pytest

from session_graph import SessionManager
from session_graph.integrations import SessionMiddleware

ROOT = Path(__file__).resolve().parents[2]


def agent_on(store: Path, llm, checkpointer) -> tuple:
    manager = SessionManager(store)
    agent = create_agent(llm, tools=[lookup], middleware=[SessionMiddleware(manager=manager)], checkpointer=checkpointer)
    return agent, manager


def config(thread: str = "t1") -> dict:
    return {"configurable": {"thread_id": thread}}


def stored_contents(store: Path, key: str = "t1") -> Counter:
    session = SessionManager(store).get(key)  # a new manager: what a restarted process reads
    assert session is not None, "nothing was stored"
    return Counter(str(m.content) for m in session.full_chat_history if isinstance(m, HumanMessage))


@pytest.mark.parametrize("failing_call", [0, 1])
def test_a_model_error_at_any_call_of_a_turn_keeps_the_input_after_a_restart(tmp_path: Path, failing_call: int) -> None:
    store = tmp_path / "sessions"
    with SqliteSaver.from_conn_string(str(tmp_path / "checkpoints.sqlite")) as saver:
        agent, _ = agent_on(store, model(fail_on={failing_call}), saver)
        with pytest.raises(ConnectionError):
            agent.invoke({"messages": [HumanMessage(content="please keep me")]}, config())
    assert stored_contents(store) == Counter({"please keep me": 1})
    session = SessionManager(store).get("t1")
    assert [m.type for m in session.full_chat_history] == ["human"]
    with SqliteSaver.from_conn_string(str(tmp_path / "checkpoints.sqlite")) as saver:
        held = [m.type for m in agent_on(store, model(), saver)[0].get_state(config()).values["messages"]]
    # the tool call and its result: in the agent's checkpoint, as a stock agent keeps them (no
    # write before the second model call; the reply's write would have stored them before the cut)
    assert held == (["human"] if failing_call == 0 else ["ai", "tool"])
    # the restarted process goes on: the next turn stores its input once, the first one stays once
    with SqliteSaver.from_conn_string(str(tmp_path / "checkpoints.sqlite")) as saver:
        agent, _ = agent_on(store, model(), saver)
        agent.invoke({"messages": [HumanMessage(content="second")]}, config())
    assert stored_contents(store) == Counter({"please keep me": 1, "second": 1})
    types = [m.type for m in SessionManager(store).get("t1").full_chat_history]
    assert types[:4] == (["human", "human", "ai", "tool"] if failing_call == 0 else ["human", "ai", "tool", "human"])


@pytest.mark.parametrize("cancelled_call", [0, 1])
def test_a_cancelled_turn_keeps_the_input_after_a_restart(tmp_path: Path, cancelled_call: int) -> None:
    store = tmp_path / "sessions"

    async def run() -> None:
        llm = model()
        agent, _ = agent_on(store, llm, InMemorySaver())
        llm.delay = 0.001 if cancelled_call else 5.0
        task = asyncio.create_task(agent.ainvoke({"messages": [HumanMessage(content="cancel me")]}, config()))
        while len(llm.prompts) <= cancelled_call:
            await asyncio.sleep(0.001)
            if cancelled_call and len(llm.prompts) == 1:
                llm.delay = 5.0  # the second call hangs: cancel it
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task

    asyncio.run(run())
    assert stored_contents(store) == Counter({"cancel me": 1})


@pytest.mark.parametrize("dying_call", [0, 1])
def test_a_process_that_dies_in_the_model_call_loses_no_input(tmp_path: Path, dying_call: int) -> None:
    """A real restart: the child process dies inside the first or the second model call of a turn."""
    store = tmp_path / "sessions"
    script = textwrap.dedent(f"""
        import os, sys, time
        sys.path[:0] = [{str(ROOT)!r}, {str(ROOT / "tests")!r}]
        from agents_util import lookup, model
        from langchain.agents import create_agent
        from langchain_core.messages import HumanMessage
        from langgraph.checkpoint.memory import InMemorySaver
        from session_graph import SessionManager
        from session_graph.integrations import SessionMiddleware

        class Dies(type(model())):
            def _generate(self, *args, **kwargs):
                if len(self.prompts) == {dying_call}:
                    os._exit(17)  # the process dies inside the provider call: no cleanup runs
                return super()._generate(*args, **kwargs)

        llm = model()
        agent = create_agent(Dies(messages=llm.messages), tools=[lookup],
                             middleware=[SessionMiddleware(manager=SessionManager({str(store)!r}))],
                             checkpointer=InMemorySaver())
        agent.invoke({{"messages": [HumanMessage(content="typed before the crash")]}},
                     {{"configurable": {{"thread_id": "t1"}}}})
    """)
    done = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 17, done.stderr
    assert stored_contents(store) == Counter({"typed before the crash": 1})
    session = SessionManager(store).get("t1")
    # the tool call and its result lived in the agent's in-memory checkpoint only, as a stock agent's do
    assert [m.type for m in session.full_chat_history] == ["human"]


def test_a_process_that_dies_in_the_second_model_call_keeps_the_tool_results_in_a_durable_checkpoint(tmp_path: Path) -> None:
    """What a stock agent with a durable checkpointer keeps of a turn that dies in its second model
    call (the tool call and its result) is kept: in that checkpoint, which the next turn stores."""
    store, checkpoints = tmp_path / "sessions", tmp_path / "checkpoints.sqlite"
    script = textwrap.dedent(f"""
        import os, sys
        sys.path[:0] = [{str(ROOT)!r}, {str(ROOT / "tests")!r}]
        from agents_util import lookup, model
        from langchain.agents import create_agent
        from langchain_core.messages import HumanMessage
        from langgraph.checkpoint.sqlite import SqliteSaver
        from session_graph import SessionManager
        from session_graph.integrations import SessionMiddleware

        class Dies(type(model())):
            def _generate(self, *args, **kwargs):
                if len(self.prompts) == 1:
                    os._exit(17)  # the process dies inside the second provider call: no cleanup runs
                return super()._generate(*args, **kwargs)

        llm = model()
        with SqliteSaver.from_conn_string({str(checkpoints)!r}) as saver:
            agent = create_agent(Dies(messages=llm.messages), tools=[lookup],
                                 middleware=[SessionMiddleware(manager=SessionManager({str(store)!r}))], checkpointer=saver)
            agent.invoke({{"messages": [HumanMessage(content="typed before the crash")]}},
                         {{"configurable": {{"thread_id": "t1"}}}}, durability="sync")
    """)
    done = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 17, done.stderr
    assert [m.type for m in SessionManager(store).get("t1").full_chat_history] == ["human"]
    with SqliteSaver.from_conn_string(str(checkpoints)) as saver:
        agent, _ = agent_on(store, model(), saver)
        assert [m.type for m in agent.get_state(config()).values["messages"]] == ["ai", "tool"]
        agent.invoke({"messages": [HumanMessage(content="after the restart")]}, config())
    session = SessionManager(store).get("t1")
    assert [m.type for m in session.full_chat_history][:4] == ["human", "ai", "tool", "human"]
    assert stored_contents(store) == Counter({"typed before the crash": 1, "after the restart": 1})


@pytest.mark.parametrize("existing", [False, True])
def test_concurrent_ainvoke_on_one_thread_store_every_message_once(tmp_path: Path, existing: bool) -> None:
    """6 concurrent ainvoke on one thread, in 4 trials (threads); before the fix about half lost a message."""
    runs, trials = 6, 4
    store = tmp_path / "sessions"

    def replies():
        for i in range(10_000):
            yield AIMessage(content=f"reply {i}")

    async def run(thread: str) -> list:
        llm = model(replies(), delay=0.01)
        agent, _ = agent_on(store, llm, InMemorySaver())
        if existing:
            await agent.ainvoke({"messages": [HumanMessage(content="seed")]}, config(thread))
        return await asyncio.gather(*(agent.ainvoke({"messages": [HumanMessage(content=f"send {i}")]}, config(thread))
                                      for i in range(runs)))

    for trial in range(trials):
        thread = f"t{trial}"
        results = asyncio.run(run(thread))
        assert len(results) == runs  # every call returned normally ...
        expected = Counter({f"send {i}": 1 for i in range(runs)}) + (Counter({"seed": 1}) if existing else Counter())
        assert stored_contents(store, thread) == expected  # ... and every message any of them accepted is stored, once
        session = SessionManager(store).get(thread)
        replies_stored = Counter(str(m.content) for m in session.full_chat_history if isinstance(m, AIMessage))
        assert sum(replies_stored.values()) == runs + existing and max(replies_stored.values()) == 1


@pytest.mark.parametrize("stored", [False, True])
def test_concurrent_aget_or_create_share_one_session_object(tmp_path: Path, stored: bool) -> None:
    """Without the middleware's lock too: N tasks asking for one key get one object, so no
    task records into an object nobody saves."""
    store = tmp_path / "sessions"
    if stored:
        seeded = SessionManager(store)
        session = seeded.get_or_create("k")
        session.append_message(HumanMessage(content="seed"))
        seeded.save(session)

    async def run() -> list:
        manager = SessionManager(store)
        return await asyncio.gather(*(manager.aget_or_create("k") for _ in range(8)))

    sessions = asyncio.run(run())
    assert len({id(s) for s in sessions}) == 1
