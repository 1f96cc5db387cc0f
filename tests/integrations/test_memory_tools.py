"""The agent's memory tools (issue 22): ``search_memory`` shows each memory's URI, and
``forget_memory`` forgets by URI or key, history kept unless the developer enables purge,
never another user's memory. A fake tool-calling model drives the real tools in ``create_agent``,
reading the URIs it acts on from the tools' own answers."""

from __future__ import annotations

import asyncio
from pathlib import Path
import re
from typing import Any

from langchain.agents import create_agent
from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langgraph.checkpoint.memory import InMemorySaver
import pytest

from session_graph import Session
from session_graph.integrations import SessionMiddleware
from session_graph.memory import FileMemoryStore, MemoryConfig, list_memories, memory_history
from session_graph.memory.recall import remember


class Forgetter(BaseChatModel):
    """Searches for ``query``, forgets the first URI the search shows (``purge`` if asked), then
    tries each URI of ``also``; answers with the tool results it saw."""

    query: str
    also: list[str] = []  # noqa: RUF012 - a pydantic field
    purge: bool = False

    @property
    def _llm_type(self) -> str:
        return "forgetter"

    def bind_tools(self, tools: Any, **kwargs: Any) -> Forgetter:
        return self

    def _generate(self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kwargs: Any) -> ChatResult:
        results = [m for m in messages if isinstance(m, ToolMessage)]
        step = len(results)
        if step == 0:
            call = {"name": "search_memory", "args": {"query": self.query}}
        elif step == 1:
            uris = re.findall(r"memory://\S+", str(results[0].content))
            args: dict[str, Any] = {"memory_id": uris[0] if uris else "nothing-found"}
            call = {"name": "forget_memory", "args": {**args, "purge": True} if self.purge else args}
        elif step - 2 < len(self.also):
            call = {"name": "forget_memory", "args": {"memory_id": self.also[step - 2]}}
        else:
            reply = AIMessage(content="\n".join(str(m.content) for m in results))
            return ChatResult(generations=[ChatGeneration(message=reply)])
        reply = AIMessage(content="", tool_calls=[{"id": f"c{step}", **call}])
        return ChatResult(generations=[ChatGeneration(message=reply)])

    async def _agenerate(self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kwargs: Any) -> ChatResult:
        return self._generate(messages, stop, run_manager, **kwargs)


def stores(tmp_path: Path) -> MemoryConfig:
    memory = MemoryConfig(store=FileMemoryStore(tmp_path / "memory", fsync=False), user="alice", agent="coder")
    remember(memory, "The user prefers a dark editor theme.", "preferences", key="editor theme")
    remember(memory, "The user runs tests with pytest.", "preferences", key="test runner")
    remember(memory.for_user("bob"), "The user prefers a dark editor theme too.", "preferences", key="editor theme")
    return memory


def run(memory: MemoryConfig, llm: Forgetter, user: str, *, allow_purge: bool = False, use_async: bool = False,
        allow_agent_forget: bool = False) -> list[str]:
    middleware = SessionMiddleware(Session(), memory=memory, recall_k=0, allow_purge=allow_purge,
                                   allow_agent_forget=allow_agent_forget)
    agent = create_agent(llm, tools=[], middleware=[middleware], checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "t", "user_id": user}}
    request = {"messages": [HumanMessage(content="Forget my editor theme.")]}
    result = asyncio.run(agent.ainvoke(request, config)) if use_async else agent.invoke(request, config)
    return str(result["messages"][-1].content).split("\n") if result["messages"] else []


@pytest.mark.parametrize("use_async", [False, True])
def test_the_agent_forgets_by_the_uri_search_shows_and_keeps_its_history(tmp_path: Path, use_async: bool) -> None:
    memory = stores(tmp_path)
    bob_uri = "memory://user/bob/preferences/editor_theme"
    answers = run(memory, Forgetter(query="editor theme", also=[bob_uri]), "alice", use_async=use_async)
    assert answers[0].startswith("- memory://user/alice/preferences/editor_theme [preferences]")
    assert answers[1] == "Forgotten (its history is kept): memory://user/alice/preferences/editor_theme"
    assert answers[2].startswith("Not forgotten:") and "another owner" in answers[2]
    assert [v["key"] for v in list_memories(memory, ["preferences"])] == ["test_runner"]
    (kept,) = memory_history(memory, "editor_theme", "preferences")
    assert kept["status"] == "forgotten" and "dark editor theme" in kept["content"]
    bob = list_memories(memory.for_user("bob"), ["preferences"])
    assert [v["key"] for v in bob] == ["editor_theme"]  # named by its URI, still never touched


def test_a_user_can_never_forget_another_user_s_memory_by_key_either(tmp_path: Path) -> None:
    memory = stores(tmp_path)
    answers = run(memory, Forgetter(query="test runner", also=["editor_theme"]), "bob")
    assert answers[0] == "No memory matches."  # bob has no test runner; alice's is never shown to bob
    assert answers[1].startswith("No memory")  # the search showed no test runner of bob's to forget
    assert answers[2] == "Forgotten (its history is kept): editor_theme"  # bob's own editor_theme, by key
    assert [v["key"] for v in list_memories(memory, ["preferences"])] == ["editor_theme", "test_runner"]
    assert list_memories(memory.for_user("bob"), ["preferences"]) == []


def test_purge_only_when_the_developer_enables_it(tmp_path: Path) -> None:
    memory = stores(tmp_path)
    remember(memory, "The user now prefers a light editor theme.", "preferences", key="editor theme")  # a past version
    assert len(memory_history(memory, "editor_theme", "preferences")) == 2
    answers = run(memory, Forgetter(query="editor theme", purge=True), "alice")  # purge asked, not enabled
    assert answers[1].endswith("(its history is kept): memory://user/alice/preferences/editor_theme")
    assert len(memory_history(memory, "editor_theme", "preferences")) == 2  # the old version and the forgotten one
    remember(memory, "The user prefers a dark editor theme again.", "preferences", key="editor theme")
    answers = run(memory, Forgetter(query="editor theme", purge=True), "alice", allow_purge=True)
    assert answers[1] == "Forgotten (every version erased): memory://user/alice/preferences/editor_theme"
    assert memory_history(memory, "editor_theme", "preferences") == []


def test_the_agent_s_shared_memories_are_forgotten_only_when_the_developer_allows(tmp_path: Path) -> None:
    memory = stores(tmp_path)
    remember(memory, "Case: flaky export tests were fixed by pinning the time zone.", "cases")
    (key,) = [v["key"] for v in list_memories(memory, ["cases"])]
    uri = f"memory://agent/coder/cases/{key}"
    answers = run(memory, Forgetter(query="qqqq", also=[uri, key]), "bob")
    assert answers[2].startswith("Not forgotten: cases memories belong to the agent")  # by its URI
    assert answers[3].startswith("No memory keyed")  # by its key: only the user's own categories are searched
    assert [v["key"] for v in list_memories(memory, ["cases"])] == [key]
    answers = run(memory, Forgetter(query="qqqq", also=[uri]), "bob", allow_agent_forget=True)
    assert answers[2] == f"Forgotten (its history is kept): {uri}"
    assert list_memories(memory, ["cases"]) == []


def test_a_key_two_categories_hold_asks_for_the_uri(tmp_path: Path) -> None:
    memory = stores(tmp_path)
    remember(memory, "Editor theme: the team's shared one is solarized.", "entities", key="editor theme")
    answers = run(memory, Forgetter(query="nothing at all zzz", also=["editor_theme"]), "alice")
    assert answers[0] == "No memory matches."
    assert "2 categories" in answers[2] and "memory:// URI" in answers[2]
    assert len(list_memories(memory, ["preferences", "entities"])) == 3


def test_remember_through_the_async_agent_de_duplicates_for_the_run_s_user(tmp_path: Path) -> None:
    from agents_util import ToolCallingFake

    memory = stores(tmp_path)
    calls = [{"id": f"r{n}", "name": "remember", "args": {"content": text, "key": "editor theme"}}
             for n, text in enumerate(["The user prefers a dark editor theme too.", "The user now prefers a light editor theme."])]
    llm = ToolCallingFake(messages=iter([AIMessage(content="", tool_calls=[call]) for call in calls] + [AIMessage(content="ok")]))
    session = Session()
    agent = create_agent(llm, tools=[], middleware=[SessionMiddleware(session, memory=memory, recall_k=0)],
                         checkpointer=InMemorySaver())
    asyncio.run(agent.ainvoke({"messages": [HumanMessage(content="remember my theme")]},
                              {"configurable": {"thread_id": "t", "user_id": "bob"}}))
    results = [str(m.content) for m in session.full_chat_history if isinstance(m, ToolMessage)]
    assert results[0].startswith("skipped:") and results[1].startswith("updated:")  # bob's own item: same text, then new
    (bob,) = list_memories(memory.for_user("bob"), ["preferences"])
    assert bob["content"] == "The user now prefers a light editor theme."
    alice = {v["key"]: v["content"] for v in list_memories(memory, ["preferences"])}
    assert alice["editor_theme"] == "The user prefers a dark editor theme."  # alice's untouched
