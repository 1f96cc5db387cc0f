"""``session_model_hooks`` and a turn that ends on a tool's result (``return_direct``): no model
call follows the tool, so no hook sees its result. The post-model hook recorded the reply that
called the tool at once; without a checkpointer its result never reached the session, and the
next turn's save wrote the call without its result: a split pair in the store, for good."""

from __future__ import annotations

import asyncio
from pathlib import Path

from agents_util import model
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.tools import tool
import pytest

from session_graph.integrations import session_model_hooks
from session_graph.stores import SessionManager

pytestmark = pytest.mark.filterwarnings("ignore:create_react_agent has been moved")  # the older prebuilt agent, on purpose


@tool(return_direct=True)
def direct(topic: str) -> str:
    """Answer the user directly."""
    return f"direct answer about {topic}"


@pytest.mark.parametrize("asynchronous", [False, True], ids=["sync", "async"])
def test_a_return_direct_turn_leaves_no_tool_call_without_its_result(tmp_path: Path, asynchronous: bool) -> None:
    from langgraph.prebuilt import create_react_agent

    replies = iter([AIMessage(content="", tool_calls=[{"id": "c0", "name": "direct", "args": {"topic": "t0"}}]),
                    AIMessage(content="plain answer")])
    with SessionManager(tmp_path) as manager:
        pre, post = session_model_hooks(manager=manager)
        agent = create_react_agent(model(replies), [direct], pre_model_hook=pre, post_model_hook=post)  # no checkpointer
        config = {"configurable": {"thread_id": "t"}}
        for question in ("q0", "q1"):
            request = {"messages": [HumanMessage(content=question)]}
            asyncio.run(agent.ainvoke(request, config)) if asynchronous else agent.invoke(request, config)
        live = manager.get("t")
        assert live is not None
        calls = {c["id"] for m in live.full_chat_history if isinstance(m, AIMessage) for c in m.tool_calls}
        results = {m.tool_call_id for m in live.full_chat_history if isinstance(m, ToolMessage)}
        assert calls <= results, [(m.type, m.text) for m in live.full_chat_history]
    with SessionManager(tmp_path) as again:  # a restarted process
        stored = again.get("t")
        assert stored is not None
        calls = {c["id"] for m in stored.full_chat_history if isinstance(m, AIMessage) for c in m.tool_calls}
        assert calls <= {m.tool_call_id for m in stored.full_chat_history if isinstance(m, ToolMessage)}
        assert [m.text for m in stored.full_chat_history][-2:] == ["q1", "plain answer"]
