"""SessionMiddleware in create_agent: bounded state, the view, threads, streaming, failures."""

from __future__ import annotations

import asyncio
import contextlib
import json
from pathlib import Path

from agents_util import broken, lookup, model, tool_then_answer
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.sqlite import SqliteSaver
import pytest

from session_graph import Session, SessionManager
from session_graph.integrations import SessionMiddleware


def agent_with(session: Session | None = None, *, manager: SessionManager | None = None, llm=None, checkpointer=None, tools=(lookup,)):
    middleware = SessionMiddleware(session, manager=manager)
    llm = llm or model()
    return create_agent(llm, tools=list(tools), middleware=[middleware], checkpointer=checkpointer or InMemorySaver(),
                        system_prompt="You are helpful."), llm


def config(thread: str = "t1") -> dict:
    return {"configurable": {"thread_id": thread}}


def test_the_state_stays_bounded_and_the_session_keeps_everything() -> None:
    session = Session().use_lite(chars=900)
    agent, llm = agent_with(session)
    for turn in range(15):
        agent.invoke({"messages": [HumanMessage(content=f"question {turn}")]}, config())
    full = session.full_chat_history
    assert [m.type for m in full[:4]] == ["human", "ai", "tool", "ai"] and len(full) == 60
    assert isinstance(full[1], AIMessage) and full[1].tool_calls[0]["name"] == "lookup"
    assert isinstance(full[2], ToolMessage) and full[2].tool_call_id == "call_0"
    state = agent.get_state(config()).values
    assert [m.id for m in state["messages"]] == [full[-1].id]  # the checkpoint holds the last reply, no more
    assert "session_key" not in state and "memo" not in state  # the key comes from the run's config: no channel of ours
    assert session.window_totals.chars < 900 + 200
    last_prompt = llm.prompts[-1]
    assert last_prompt[0].type == "system" and last_prompt[0].content.startswith("You are helpful.")
    assert all(m.type != "tool" for m in last_prompt[1:2])  # the view never opens on a tool result


def test_the_model_sees_the_memo() -> None:
    session = Session(memo_update_handler=lambda memo, messages, attachments, settings: {"turns_seen": memo.get("turns_seen", 0) + len(messages)})
    session.use_memo(messages=4)
    agent, llm = agent_with(session)
    for turn in range(4):
        agent.invoke({"messages": [HumanMessage(content=f"q{turn}")]}, config())
    system = llm.prompts[-1][0].content
    assert system.startswith("You are helpful.") and "Memo of the earlier conversation" in system
    memo = json.loads(system.split("(JSON):\n", 1)[1])
    assert memo["turns_seen"] > 0 and "last_resize" not in memo


def test_a_token_budget_bounds_what_the_model_is_sent() -> None:
    from session_graph.accounting.tokens import message_tokens

    session = Session().configure(limit={"tokens": 300})
    llm = model()
    long_prompt = "You are a careful assistant. " * 12  # the agent's own system prompt counts too
    agent = create_agent(llm, tools=[lookup], middleware=[SessionMiddleware(session)], checkpointer=InMemorySaver(),
                         system_prompt=long_prompt)
    for turn in range(12):
        agent.invoke({"messages": [HumanMessage(content=f"question {turn} " + "pad " * 10)]}, config())
    for prompt in llm.prompts:
        assert prompt[0].content.startswith(long_prompt.strip())
        assert sum(message_tokens(m, session.counter) for m in prompt) + 3 <= 300
    assert len(llm.prompts[-1]) > 2  # and the window is still there


def test_threads_get_their_own_sessions_and_resume_after_a_restart(tmp_path: Path) -> None:
    store = tmp_path / "sessions"
    with SqliteSaver.from_conn_string(str(tmp_path / "checkpoints.sqlite")) as saver:
        agent, _ = agent_with(manager=SessionManager(store), checkpointer=saver)
        agent.invoke({"messages": [HumanMessage(content="I am Ann")]}, config("ann"))
        agent.invoke({"messages": [HumanMessage(content="I am Bob")]}, config("bob"))
    with SqliteSaver.from_conn_string(str(tmp_path / "checkpoints.sqlite")) as saver:  # a new process
        manager = SessionManager(store)
        agent, llm = agent_with(manager=manager, checkpointer=saver, llm=model(tool_then_answer()))
        agent.invoke({"messages": [HumanMessage(content="who am I?")]}, config("ann"))
        ann, bob = manager.get("ann"), manager.get("bob")
        assert [m.content for m in ann.full_chat_history if m.type == "human"] == ["I am Ann", "who am I?"]
        assert [m.content for m in bob.full_chat_history if m.type == "human"] == ["I am Bob"]
        sent = " ".join(str(m.content) for m in llm.prompts[0])
        assert "I am Ann" in sent and "I am Bob" not in sent
        assert [m.id for m in agent.get_state(config("ann")).values["messages"]] == [ann.full_chat_history[-1].id]


def test_streaming_messages_works_and_never_streams_the_memo_model() -> None:
    from langchain_core.language_models.fake_chat_models import FakeListChatModel

    memo_model = FakeListChatModel(responses=[json.dumps({"memo": {"secret": "memo-internal"}})] * 50)
    session = Session(model=memo_model).use_memo(messages=4)
    agent, _ = agent_with(session)
    streamed = []
    for turn in range(3):
        for chunk, _ in agent.stream({"messages": [HumanMessage(content=f"q{turn}")]}, config(), stream_mode="messages"):
            streamed.append(str(chunk.content))
    text = "".join(streamed)
    assert "answer 2" in text and "memo-internal" not in text
    assert session.memo["secret"] == "memo-internal"

    async def run_async() -> list[str]:
        out = []
        async for chunk, _ in agent.astream({"messages": [HumanMessage(content="async")]}, config(), stream_mode="messages"):
            out.append(str(chunk.content))
        return out

    assert "answer 3" in "".join(asyncio.run(run_async()))


def consistent(agent, session: Session, thread: str = "t1") -> None:
    state = agent.get_state(config(thread)).values["messages"]
    ids = [m.id for m in session.full_chat_history]
    assert all(m in session for m in state)  # everything checkpointed is in the session
    assert not state or [m.id for m in state] == ids[ids.index(state[0].id) :]  # and it is the newest part of it


def test_a_model_error_leaves_session_and_checkpoint_consistent() -> None:
    session = Session().use_lite(chars=600)
    agent, llm = agent_with(session, llm=model(fail_on={6}))
    for turn in range(3):
        agent.invoke({"messages": [HumanMessage(content=f"q{turn}")]}, config())
    with pytest.raises(ConnectionError):
        agent.invoke({"messages": [HumanMessage(content="this one fails")]}, config())
    assert session.full_chat_history[-1].content == "this one fails"
    consistent(agent, session)
    llm.fail_on = set()
    agent.invoke({"messages": [HumanMessage(content="retry")]}, config())
    consistent(agent, session)
    assert session.full_chat_history[-1].type == "ai"


def test_a_tool_error_leaves_session_and_checkpoint_consistent() -> None:
    session = Session()
    replies = iter([AIMessage(content="", tool_calls=[{"id": "b1", "name": "broken", "args": {"topic": "x"}}]),
                    AIMessage(content="sorry, the tool failed")])
    agent, _ = agent_with(session, llm=model(replies), tools=(broken,))
    with contextlib.suppress(RuntimeError):  # raised or handed to the model: both must stay consistent
        agent.invoke({"messages": [HumanMessage(content="use the broken tool")]}, config())
    consistent(agent, session)
    assert session.full_chat_history[0].content == "use the broken tool"


def test_a_cancelled_run_leaves_session_and_checkpoint_consistent() -> None:
    session = Session()
    agent, llm = agent_with(session, llm=model(delay=0.2))

    async def scenario() -> None:
        await agent.ainvoke({"messages": [HumanMessage(content="first")]}, config())
        calls = len(llm.prompts)
        task = asyncio.create_task(agent.ainvoke({"messages": [HumanMessage(content="cancel me")]}, config()))
        while len(llm.prompts) == calls:  # cancel while the model call is under way
            await asyncio.sleep(0.005)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(scenario())
    consistent(agent, session)
    assert any(m.content == "cancel me" for m in session.full_chat_history)


def test_middleware_needs_a_session_or_a_manager(tmp_path: Path) -> None:
    from session_graph import ConfigurationError

    with pytest.raises(ConfigurationError, match="either a session or a SessionManager"):
        SessionMiddleware()
    agent = create_agent(model(), tools=[lookup], middleware=[SessionMiddleware(manager=SessionManager(tmp_path))])
    with pytest.raises(ConfigurationError, match="thread_id"):
        agent.invoke({"messages": [HumanMessage(content="hi")]})


def test_memories_are_recalled_into_the_prompt_and_the_tools_never_duplicate(tmp_path: Path) -> None:
    from agents_util import ToolCallingFake

    from session_graph.memory import MemoryConfig
    from session_graph.memory.filestore import FileMemoryStore
    from session_graph.memory.recall import remember

    memory = MemoryConfig(store=FileMemoryStore(tmp_path / "memory", fsync=False), user="alice", agent="coder")
    remember(memory, "The user prefers pytest-asyncio in strict mode.", "preferences", key="testing")

    def replies():
        yield AIMessage(content="", tool_calls=[{"id": "r1", "name": "remember",
                                                 "args": {"content": "The user prefers pytest-asyncio in strict mode.",
                                                          "category": "preferences", "key": "testing"}}])
        yield AIMessage(content="", tool_calls=[{"id": "s1", "name": "search_memory", "args": {"query": "pytest strict"}}])
        yield AIMessage(content="Noted.")

    llm = ToolCallingFake(messages=replies())
    session = Session().configure(limit={"tokens": 2000})
    middleware = SessionMiddleware(session, memory=memory, recall_k=3)
    agent = create_agent(llm, tools=[], middleware=[middleware], checkpointer=InMemorySaver(), system_prompt="You are helpful.")
    agent.invoke({"messages": [HumanMessage(content="How should I configure pytest for async tests?")]}, config())
    system = llm.prompts[0][0].content
    assert system.startswith("You are helpful.") and "Relevant long-term memories:" in system and "strict mode" in system
    results = [m for m in session.full_chat_history if isinstance(m, ToolMessage)]
    assert results[0].content.startswith("skipped:")  # the same fact again: no second item
    assert "strict mode" in results[1].content and '[from "remember; tool"]' in results[1].content  # cited
    items = memory.memory_store.search(("user", "alice", "memories", "preferences"), limit=10)
    assert [i.key for i in items] == ["testing"]
    assert session.view(outside_tokens=0).tokens <= 2000
