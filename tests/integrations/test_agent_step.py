"""One agent step for every plug point: failures that never fail the user's turn, any chat
Runnable as memo model, the memo shown everywhere, isolated threads, async end to end."""

from __future__ import annotations

import asyncio
import gc
import json
import logging
from pathlib import Path
import time
from typing import Any

from agents_util import lookup, model, tool_then_answer
from langchain.agents import create_agent
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition
import pytest

from session_graph import ConfigurationError, MemoUpdateError, Session, SessionManager
from session_graph.accounting.tokens import message_tokens
from session_graph.integrations import SessionMiddleware, attach_session, session_node, session_pre_model_hook
from session_graph.stores import JsonlStore

BUDGET = 700


class MemoModel(BaseChatModel):
    """A memo model that fails on chosen calls (exception, timeout or bad JSON) and records what it folded."""

    failure: str = "exception"
    fail_calls: set[int] = set()  # noqa: RUF012 - a pydantic field
    calls: int = 0
    folded: list[str] = []  # noqa: RUF012 - transcript lines of every successful fold

    @property
    def _llm_type(self) -> str:
        return "memo-fake"

    def _generate(self, messages: list[Any], stop: Any = None, run_manager: Any = None, **kwargs: Any) -> ChatResult:
        call, self.calls = self.calls, self.calls + 1
        if call in self.fail_calls:
            if self.failure == "exception":
                raise ConnectionError("memo provider down (simulated)")
            if self.failure == "timeout":
                raise TimeoutError("memo model timed out (simulated)")
            return ChatResult(generations=[ChatGeneration(message=AIMessage(content="Sure! I updated the memo."))])
        lines = messages[-1].content.split("New messages:\n", 1)[1].splitlines()
        self.folded = [*self.folded, *lines]
        memo = {"folds": call, "lines": len(self.folded)}
        return ChatResult(generations=[ChatGeneration(message=AIMessage(content=json.dumps({"memo": memo})))])


def memo_session(memo_model: Any) -> Session:
    session = Session(model=memo_model).use_memo()
    session.set_settings("session.limit.tokens", BUDGET)
    session.set_settings("session.summary.reserve_tokens", 80)
    return session


def hand_built(session: Session, llm: Any) -> Any:
    async def call_model(state: MessagesState) -> dict[str, Any]:
        return {"messages": [await llm.ainvoke(state["messages"])]}  # the model reads the state: the view

    def call_model_sync(state: MessagesState) -> dict[str, Any]:
        return {"messages": [llm.invoke(state["messages"])]}

    from langchain_core.runnables import RunnableLambda

    builder = StateGraph(MessagesState)
    builder.add_node("session", session_node(session, goto="model"), destinations=("model",))
    builder.add_node("model", RunnableLambda(call_model_sync, afunc=call_model))
    builder.add_node("tools", ToolNode([lookup]))
    builder.add_edge(START, "session")
    builder.add_conditional_edges("model", tools_condition, {"tools": "tools", END: "session_end"})
    builder.add_node("session_end", session_node(session))  # records the final reply before the turn ends
    builder.add_edge("session_end", END)
    builder.add_edge("tools", "session")
    return builder.compile(checkpointer=InMemorySaver())


def plug(point: str, session: Session, llm: Any) -> Any:
    """An invoker ``(text, async) -> None`` for one plug point."""
    cfg = {"configurable": {"thread_id": "t"}}
    if point == "middleware":
        agent = create_agent(llm, tools=[lookup], middleware=[SessionMiddleware(session)], checkpointer=InMemorySaver(),
                             system_prompt="You are helpful.")
    elif point == "node":
        agent = hand_built(session, llm)
    elif point == "hook":
        from langgraph.prebuilt import create_react_agent

        agent = create_react_agent(llm, [lookup], pre_model_hook=session_pre_model_hook(session), checkpointer=InMemorySaver())
    else:
        attached = attach_session(create_agent(llm, tools=[lookup]), session)

        async def run_glue(text: str, use_async: bool) -> None:
            if use_async:
                await attached.ainvoke(text)
            else:
                attached.invoke(text)

        return run_glue

    async def run(text: str, use_async: bool) -> None:
        payload = {"messages": [HumanMessage(content=text)]}
        if use_async:
            await agent.ainvoke(payload, cfg)
        else:
            agent.invoke(payload, cfg)

    return run


POINTS = ["middleware", "node", "hook", "glue"]


@pytest.mark.filterwarnings("ignore:create_react_agent has been moved")
@pytest.mark.parametrize("use_async", [False, True], ids=["sync", "async"])
@pytest.mark.parametrize("failure", ["exception", "bad_json", "timeout"])
@pytest.mark.parametrize("point", POINTS)
def test_a_failing_memo_model_never_fails_the_users_turn(point: str, failure: str, use_async: bool) -> None:
    memo_model = MemoModel(failure=failure, fail_calls={0, 1})
    session = memo_session(memo_model)
    llm = model(tool_then_answer(words=40))
    run = plug(point, session, llm)

    async def scenario() -> None:
        for turn in range(14):
            await run(f"question {turn} " + "about the export " * 8, use_async)  # never raises
            assert session.view().tokens <= BUDGET

    asyncio.run(scenario())
    assert memo_model.calls > 2  # it failed, and later turns tried again and succeeded
    users = [m.content for m in session.full_chat_history if isinstance(m, HumanMessage)]
    assert [u.split(" ")[1] for u in users] == [str(t) for t in range(14)]  # nothing lost
    assert session.memo_cursor > 0 and session.memo_for_model["lines"] == len(memo_model.folded)
    assert len(memo_model.folded) == session.memo_cursor  # what was missed was folded later, each message once
    for prompt in llm.prompts:
        assert sum(message_tokens(m, session.counter) for m in prompt) + 3 <= BUDGET + 40  # the agent's own prompt aside


@pytest.mark.filterwarnings("ignore:create_react_agent has been moved")
@pytest.mark.parametrize("point", POINTS)
def test_the_memo_reaches_the_model_on_every_plug_point(point: str) -> None:
    session = memo_session(MemoModel())
    llm = model(tool_then_answer(words=40))
    run = plug(point, session, llm)
    for turn in range(10):
        asyncio.run(run(f"question {turn} " + "about the export " * 8, False))
    assert session.memo_for_model, "the memo was folded"
    last = llm.prompts[-1]
    assert any("Memo of the earlier conversation" in m.text for m in last if m.type == "system")
    recorded = [m for m in session.full_chat_history if "Memo of the earlier" in m.text]
    assert recorded == []  # what the view made is never recorded as conversation


def test_on_memory_error_raise_surfaces_the_failure() -> None:
    session = memo_session(MemoModel(fail_calls=set(range(100))))
    agent = create_agent(model(tool_then_answer(words=40)), tools=[lookup], checkpointer=InMemorySaver(),
                         middleware=[SessionMiddleware(session, on_memory_error="raise")])
    with pytest.raises(MemoUpdateError):
        for turn in range(14):
            agent.invoke({"messages": [HumanMessage(content=f"question {turn} " + "pad " * 30)]}, {"configurable": {"thread_id": "t"}})


class Flaky(BaseChatModel):
    """Fails its first ``failures`` calls, then answers with a memo."""

    failures: int = 1
    calls: int = 0

    @property
    def _llm_type(self) -> str:
        return "flaky-fake"

    def _generate(self, messages: list[Any], stop: Any = None, run_manager: Any = None, **kwargs: Any) -> ChatResult:
        self.calls += 1
        if self.calls <= self.failures:
            raise ConnectionError("429 rate limited (simulated)")
        return ChatResult(generations=[ChatGeneration(message=AIMessage(content=json.dumps({"memo": {"ok": self.calls}})))])


def test_any_chat_runnable_is_a_memo_model() -> None:
    flaky = Flaky()
    session = Session(model=flaky.with_retry(stop_after_attempt=2, wait_exponential_jitter=False)).use_memo(messages=2)
    for i in range(2):
        session.append_message({"role": "user", "content": f"u{i}"})
        session.append_message({"role": "assistant", "content": f"a{i}"})
    session.resize("lite")
    assert session.memo_for_model == {"ok": 2} and flaky.calls == 2
    fallback = Session(model=Flaky(failures=10**6).with_fallbacks([Flaky(failures=0)])).use_memo(messages=2)
    fallback.append_message({"role": "user", "content": "u"})
    fallback.append_message({"role": "assistant", "content": "a"})
    fallback.resize("lite")
    assert fallback.memo_for_model == {"ok": 1}
    with pytest.raises(ConfigurationError, match="chat Runnable"):
        Session(model=42)  # type: ignore[arg-type]


class ToolCaller(BaseChatModel):
    """A model with tool calling: structured output comes back as a tool call."""

    args: dict[str, Any] = {}  # noqa: RUF012
    bound: list[Any] = []  # noqa: RUF012

    @property
    def _llm_type(self) -> str:
        return "tool-caller-fake"

    def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
        self.bound = [*self.bound, tools]
        return self

    def _generate(self, messages: list[Any], stop: Any = None, run_manager: Any = None, **kwargs: Any) -> ChatResult:
        call = {"id": "s1", "name": "MemoReply", "args": self.args}
        return ChatResult(generations=[ChatGeneration(message=AIMessage(content="", tool_calls=[call]))])


def test_structured_output_is_used_where_the_model_supports_it() -> None:
    llm = ToolCaller(args={"memo": {"city": "Oslo"}})
    session = Session(model=llm).use_memo(messages=2)
    session.append_message({"role": "user", "content": "I live in Oslo"})
    session.append_message({"role": "assistant", "content": "Nice"})
    session.resize("lite")
    assert session.memo_for_model == {"city": "Oslo"} and llm.bound  # asked through with_structured_output
    bare = Session(model=ToolCaller(args={"facts": "no memo key"})).use_memo(messages=2)
    bare.append_message({"role": "user", "content": "x"})
    bare.append_message({"role": "assistant", "content": "y"})
    bare.resize("lite")
    assert bare.memo_for_model == {"facts": "no memo key"}  # the spec's fallback: the raw dict is the memo
    bad = Session(model=ToolCaller(args={"memo": ["not", "a", "dict"]})).use_memo(messages=2)
    bad.append_message({"role": "user", "content": "x"})
    bad.append_message({"role": "assistant", "content": "y"})
    with pytest.raises(MemoUpdateError, match='its "memo" is a list'):
        bad.resize("lite")
    assert bad.memo_for_model == {}  # the failure is recorded for the back-off only


def test_a_fixed_session_refuses_a_second_thread() -> None:
    session = Session()
    agent = create_agent(model(), tools=[lookup], middleware=[SessionMiddleware(session)], checkpointer=InMemorySaver())
    agent.invoke({"messages": [HumanMessage(content="I am Ann, my secret is 1234")]}, {"configurable": {"thread_id": "ann"}})
    with pytest.raises(ConfigurationError, match="thread_id 'ann'"):
        agent.invoke({"messages": [HumanMessage(content="I am Bob")]}, {"configurable": {"thread_id": "bob"}})
    assert not any("Bob" in m.text for m in session.full_chat_history)
    shared = Session()
    agent = create_agent(model(), tools=[lookup], checkpointer=InMemorySaver(),
                         middleware=[SessionMiddleware(shared, share_across_threads=True)])
    for thread in ("a", "b"):
        agent.invoke({"messages": [HumanMessage(content=f"hi from {thread}")]}, {"configurable": {"thread_id": thread}})
    assert len([m for m in shared.full_chat_history if isinstance(m, HumanMessage)]) == 2


def test_concurrent_async_requests_on_one_session_take_turns() -> None:
    session = Session()
    llm = model(delay=0.05)
    attached = attach_session(create_agent(llm, tools=[lookup]), session)

    async def both() -> None:
        await asyncio.gather(attached.ainvoke("first"), attached.ainvoke("second"))

    asyncio.run(both())
    kinds = [(m.type, m.text.split(":")[0]) for m in session.full_chat_history]
    assert [k for k, _ in kinds] == ["human", "ai", "tool", "ai", "human", "ai", "tool", "ai"]  # whole turns, in order
    middleware_session = Session()
    agent = create_agent(model(delay=0.05), tools=[lookup], middleware=[SessionMiddleware(middleware_session)],
                         checkpointer=InMemorySaver())
    cfg = {"configurable": {"thread_id": "t"}}

    async def racing() -> None:
        await asyncio.gather(*(agent.ainvoke({"messages": [HumanMessage(content=f"q{i}")]}, cfg) for i in range(2)))

    asyncio.run(racing())  # no "already resizing" error after a reply was written
    texts = [m.text for m in middleware_session.full_chat_history if isinstance(m, HumanMessage)]
    assert sorted(texts) == ["q0", "q1"]


class SlowDisk(JsonlStore):
    """A JSONL store whose every call takes 0.3 s, as on a slow network disk."""

    def _slow(self) -> None:
        time.sleep(0.3)

    def update(self, *args: Any, **kwargs: Any) -> int:  # every write is an update
        self._slow()
        return super().update(*args, **kwargs)

    def read(self, *args: Any, **kwargs: Any) -> Any:
        self._slow()
        return super().read(*args, **kwargs)

    def version(self, *args: Any, **kwargs: Any) -> Any:
        self._slow()
        return super().version(*args, **kwargs)


def test_an_async_agent_turn_never_blocks_the_event_loop_on_the_store(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    manager = SessionManager(SlowDisk(tmp_path / "slow"))
    agent = create_agent(model(), tools=[lookup], middleware=[SessionMiddleware(manager=manager)], checkpointer=InMemorySaver())

    async def turns() -> None:
        asyncio.get_running_loop().slow_callback_duration = 0.25
        for turn in range(2):
            await agent.ainvoke({"messages": [HumanMessage(content=f"q{turn}")]}, {"configurable": {"thread_id": "t"}})

    gc.collect()
    gc.disable()  # a full collection of the suite's heap can hold one step past the threshold: not a store call
    try:
        with caplog.at_level(logging.WARNING, logger="asyncio"):
            asyncio.run(turns(), debug=True)
    finally:
        gc.enable()
    slow = [r.getMessage() for r in caplog.records if "took" in r.getMessage()]
    assert slow == []  # every store call ran off the loop
    assert len(manager.get("t").full_chat_history) == 8  # and the turns were stored
