"""The agent's system message keeps its content blocks and fields wherever ours is merged into it:
the middleware, the node and pre-model hook, a view's "merge" of system messages (an Anthropic
``cache_control`` block, an image block, ``additional_kwargs``, the id and the name)."""

from __future__ import annotations

import asyncio
import copy
import json

from agents_util import model
from langchain.agents import create_agent
from langchain.agents.middleware import ModelRequest
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage
from langgraph.checkpoint.memory import InMemorySaver
from resize_util import WordCounter

from session_graph import Session
from session_graph.integrations import SessionMiddleware, session_node, session_pre_model_hook
from session_graph.integrations.history_recall import RECALL_HEADER, plain_system

RULES = "You are a careful travel assistant. Always answer with the booking reference first. " * 4
CACHED = {"type": "text", "text": RULES, "cache_control": {"type": "ephemeral"}}
IMAGE = {"type": "image", "source_type": "url", "url": "https://example.com/logo.png"}


def agent_message() -> SystemMessage:
    return SystemMessage(content=[copy.deepcopy(CACHED)], id="agent-sys", name="travel",
                         additional_kwargs={"provider_flag": True})


def memo_session() -> Session:
    session = Session(memo_update_handler=lambda memo, messages, attachments, settings: {"seen": memo.get("seen", 0) + len(messages)})
    return session.use_memo(messages=4)


def config(thread: str = "t1") -> dict:
    return {"configurable": {"thread_id": thread}}


def check_agent_first(sent: SystemMessage, agent: SystemMessage) -> list:
    """The agent's blocks first and unchanged, its fields kept; returns the blocks after them."""
    assert isinstance(sent, SystemMessage) and isinstance(sent.content, list)
    assert sent.content[: len(agent.content)] == agent.content
    assert sent.content[0]["cache_control"] == {"type": "ephemeral"}
    assert (sent.id, sent.name, sent.additional_kwargs) == (agent.id, agent.name, agent.additional_kwargs)
    return sent.content[len(agent.content) :]


def test_create_agent_sends_the_agents_cache_control_block_with_the_memo_after_it() -> None:
    session, agent_sys = memo_session(), agent_message()
    llm = model(iter([AIMessage(content=f"answer {i}") for i in range(10)]))
    agent = create_agent(llm, tools=[], middleware=[SessionMiddleware(session)], checkpointer=InMemorySaver(), system_prompt=agent_sys)
    for turn in range(5):
        agent.invoke({"messages": [HumanMessage(content=f"question {turn}")]}, config())
    assert agent_sys.content == [CACHED]  # the agent's own message is never edited
    for prompt in llm.prompts:
        check_agent_first(prompt[0], agent_sys)
        assert all(not isinstance(m, SystemMessage) for m in prompt[1:])  # one system message
    ours = check_agent_first(llm.prompts[-1][0], agent_sys)
    assert [b["type"] for b in ours] == ["text", "text"] and "Memo of the earlier conversation" in ours[0]["text"]
    assert json.loads(ours[0]["text"].split("(JSON):\n", 1)[1])["seen"] > 0
    assert ours[1]["text"].startswith(RECALL_HEADER) and '"question 0"' in ours[1]["text"]  # recalled: its own block
    assert all("cache_control" not in b for b in ours)  # ours is not cached as the agent's prefix


def test_the_async_agent_keeps_them_too() -> None:
    session, agent_sys = memo_session(), agent_message()
    llm = model(iter([AIMessage(content=f"answer {i}") for i in range(10)]))
    agent = create_agent(llm, tools=[], middleware=[SessionMiddleware(session)], checkpointer=InMemorySaver(), system_prompt=agent_sys)

    async def run() -> None:
        for turn in range(5):
            await agent.ainvoke({"messages": [HumanMessage(content=f"question {turn}")]}, config())

    asyncio.run(run())
    ours = check_agent_first(llm.prompts[-1][0], agent_sys)
    assert "Memo of the earlier conversation" in ours[0]["text"]


def request(system: SystemMessage | None) -> ModelRequest:
    return ModelRequest(model=model([]), messages=[], system_message=system, tool_choice=None, tools=[], state={"messages": []})


def test_with_view_merges_by_the_content_of_every_part() -> None:
    session = Session().configure(limit={"tokens": 4000})
    session.append_message(HumanMessage(content="hi", id="h1"))
    recalled = "Relevant long-term memories:\n- the user prefers aisle seats"
    # blocks: the agent's first, unchanged, then ours as text blocks
    agent_sys = agent_message()
    sent = SessionMiddleware._with_view(session, request(agent_sys), recalled).system_message
    assert check_agent_first(sent, agent_sys) == [{"type": "text", "text": recalled}]
    # nothing to add: the agent's message itself
    assert SessionMiddleware._with_view(session, request(agent_sys)).system_message is agent_sys
    # plain strings: one string, the shared message of that text (made once per text)
    plain = SessionMiddleware._with_view(session, request(SystemMessage(content="Be brief.")), recalled).system_message
    assert plain.content == f"Be brief.\n\n{recalled}" and plain is plain_system(f"Be brief.\n\n{recalled}")
    # a string with fields of its own keeps them, still a string
    named = SystemMessage(content="Be brief.", id="s1", name="rules")
    sent = SessionMiddleware._with_view(session, request(named), recalled).system_message
    assert (sent.content, sent.id, sent.name) == (f"Be brief.\n\n{recalled}", "s1", "rules")
    # no agent's message: the session's own system prompt's blocks
    own = Session().configure(limit={"tokens": 4000})
    own.append_message(SystemMessage(content=[copy.deepcopy(CACHED), IMAGE], id="own-sys"))
    own.append_message(HumanMessage(content="hi", id="h1"))
    sent = SessionMiddleware._with_view(own, request(None), recalled).system_message
    assert sent.content == [CACHED, IMAGE, {"type": "text", "text": recalled}]
    assert SessionMiddleware._with_view(Session(), request(None)).system_message is None


def test_the_agents_blocks_count_against_the_budget() -> None:
    session = Session().configure(limit={"tokens": 4000})
    session.append_message(HumanMessage(content="hi", id="h1"))
    blocks = SystemMessage(content=[copy.deepcopy(CACHED)])
    assert session.tokens_of(blocks) >= session.tokens_of(SystemMessage(content=RULES)) > 50
    bare = session.view().tokens
    sent = SessionMiddleware._with_view(session, request(blocks))
    assert sent.system_message is blocks and session.view(outside_tokens=session.tokens_of(blocks)).tokens >= bare + 50


def hook_input(session: Session, steps: int, *, node: bool = False) -> list:
    """The messages the node (or the pre-model hook) hands the model after ``steps`` turns."""
    runnable = session_node(session) if node else session_pre_model_hook(session)
    messages: list = [SystemMessage(content=[copy.deepcopy(CACHED), IMAGE], id="own-sys", name="travel")]
    sent: list = []
    for turn in range(steps):
        messages = [*messages, HumanMessage(content=f"question {turn}", id=f"h{turn}")]
        out = runnable.invoke({"messages": messages}, {"configurable": {"thread_id": "n1"}})
        sent = list((out["messages"] if node else out["llm_input_messages"]).value if node else out["llm_input_messages"])
        messages = [*messages, AIMessage(content=f"answer {turn}", id=f"a{turn}")]
    return sent


def test_the_node_and_the_pre_model_hook_keep_the_system_prompts_blocks() -> None:
    for node in (False, True):
        sent = hook_input(memo_session(), 6, node=node)
        first = sent[0]
        assert first.content == [CACHED, IMAGE] and (first.id, first.name) == ("own-sys", "travel")
        assert any("Memo of the earlier conversation" in m.text for m in sent[1:] if isinstance(m, SystemMessage))


def test_a_merge_of_the_views_system_messages_keeps_the_blocks() -> None:
    session = memo_session()
    session.set_settings("session.view.system_messages", "merge")
    sent = hook_input(session, 6)
    first = sent[0]
    assert first.content[:2] == [CACHED, IMAGE] and (first.id, first.name) == ("own-sys", "travel")
    assert first.content[2]["type"] == "text" and "Memo of the earlier conversation" in first.content[2]["text"]
    assert first.content[3]["text"].startswith(RECALL_HEADER)  # the recall joins the one merged message
    assert not any(isinstance(m, SystemMessage) for m in sent[1:])


def test_the_agents_blocks_are_counted_once_per_content_and_again_after_an_edit() -> None:
    counter = WordCounter()
    session = Session().configure(limit={"tokens": 4000})
    session.set_token_counter(counter)
    session.append_message(HumanMessage(content="hi", id="h1"))
    agent_sys = SystemMessage(content=[{"type": "text", "text": "Be brief and kind.", "cache_control": {"type": "ephemeral"}}])
    first = session.tokens_of(agent_sys)
    for _ in range(5):
        SessionMiddleware._with_view(session, request(agent_sys), "Recalled: aisle seats.")
    assert session.tokens_of(agent_sys) == first and counter.texts.count("Be brief and kind.") == 1
    agent_sys.content[0]["text"] = "Be brief, kind and exact in every answer."  # edited in place: counted anew
    assert session.tokens_of(agent_sys) > first and counter.texts.count("Be brief, kind and exact in every answer.") == 1
    agent_sys.content = [{"type": "text", "text": "Short."}]  # replaced
    assert session.tokens_of(agent_sys) < first
