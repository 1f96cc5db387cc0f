"""Tenancy of long-term memory (issue 22): tenants never share memory. Not the user's own
memories, nor the users a run names (``config["configurable"]``, runtime context), nor the
agent's shared memories (cases, patterns: shared by the users of one tenant, never across
tenants), nor their version history, change feed, prefilter hits, recall or exports. Every
namespace is derived from the config; nothing stored names where it is read or written."""

from __future__ import annotations

import json
from pathlib import Path

from langchain_core.language_models.fake_chat_models import FakeListChatModel
from langgraph.store.memory import InMemoryStore
import pytest

from session_graph import ConfigurationError, SessionManager
from session_graph.memory import MemoryConfig, export_memories, list_memories, memory_history
from session_graph.memory.changes import meta_namespace
from session_graph.memory.manage import expire
from session_graph.memory.prefilter import prefilter
from session_graph.memory.recall import recall, remember

SUMMARY = "# Session Summary\n**Overview**: deploys | x | done"
RUN_BOB = {"configurable": {"user_id": "bob"}}


def managers(tmp_path: Path, *tenants: str) -> list[SessionManager]:
    memory = MemoryConfig(store=InMemoryStore(), user="alice", agent="coder")
    base = SessionManager(tmp_path / "sessions", memory=memory)
    return [base.for_tenant(tenant) for tenant in tenants]


def test_one_user_named_by_runs_of_two_tenants_has_two_memories(tmp_path: Path) -> None:
    acme, globex = managers(tmp_path, "acme", "globex")
    assert acme.memory is not None and globex.memory is not None
    remember(acme.memory.for_run(RUN_BOB), "Bob drinks green tea.", key="drink")
    bob_at_globex = globex.memory.for_run(RUN_BOB)
    assert bob_at_globex.user == "bob" and bob_at_globex.tenant == "globex"
    assert recall(bob_at_globex, "green tea") == [] and list_memories(bob_at_globex) == []
    assert [v["content"] for v in list_memories(acme.memory.for_run(RUN_BOB))] == ["Bob drinks green tea."]
    assert remember(bob_at_globex, "Bob drinks green tea.", key="drink") == "created"  # not a skip of acme's
    assert bob_at_globex.namespace("preferences") != acme.memory.for_run(RUN_BOB).namespace("preferences")


def test_the_agent_s_shared_memories_are_per_tenant(tmp_path: Path) -> None:
    acme, globex = managers(tmp_path, "acme", "globex")
    assert acme.memory is not None and globex.memory is not None
    remember(acme.memory, "Deploy with make ship after the tests pass.", "patterns", key="deploy")
    assert list_memories(acme.memory.for_run(RUN_BOB), ["patterns"])  # shared by acme's users
    assert list_memories(globex.memory, ["patterns"]) == [] and recall(globex.memory, "deploy make ship") == []
    candidate = {"category": "patterns", "key": "deploy", "abstract": "deploy", "content": "Deploy with make ship."}
    (hits,) = prefilter(globex.memory.memory_store, [candidate], [globex.memory.namespace("patterns")])
    assert hits == {}


def test_a_tenant_s_commit_writes_its_own_user_and_agent_memories(tmp_path: Path) -> None:
    acme, globex = managers(tmp_path, "acme", "globex")
    assert acme.memory is not None and globex.memory is not None
    reply = json.dumps({"memories": [
        {"category": "preferences", "key": "editor", "abstract": "Vim", "content": "Prefers Vim."},
        {"category": "cases", "abstract": "Fixed CI", "content": "CI hung on a fixture; strict mode fixed it."}]})
    object.__setattr__(acme.memory, "model", FakeListChatModel(responses=[SUMMARY, reply]))
    session = acme.get_or_create("s1")
    session.append_message({"role": "user", "content": "I use Vim; CI hung."})
    assert acme.commit(session)["status"] == "committed"
    assert {v["category"] for v in list_memories(acme.memory)} == {"preferences", "cases"}
    assert list_memories(globex.memory) == []


def test_history_and_change_feed_are_per_tenant(tmp_path: Path) -> None:
    acme, globex = managers(tmp_path, "acme", "globex")
    assert acme.memory is not None and globex.memory is not None
    remember(acme.memory, "The team uses tabs.", key="indent")
    remember(acme.memory, "The team uses tabs.", "patterns", key="indent")
    remember(globex.memory, "The team uses spaces.", key="indent")
    assert remember(acme.memory, "The team now uses spaces.", key="indent") == "updated"
    assert [v["content"] for v in memory_history(acme.memory, "indent", "preferences")] == [
        "The team uses tabs.", "The team now uses spaces."]
    assert [v["content"] for v in memory_history(globex.memory, "indent", "preferences")] == ["The team uses spaces."]
    feeds = {meta_namespace(m.namespace(c)) for m in (acme.memory, globex.memory) for c in ("preferences", "patterns")}
    assert len(feeds) == 4


@pytest.mark.parametrize("tenant", ["org/42", "acme.com", "team:blue", "a~b"])
def test_any_tenant_key_a_manager_takes_gets_memory_of_its_own(tmp_path: Path, tenant: str) -> None:
    (scoped, other) = managers(tmp_path, tenant, "default-ish")
    assert scoped.memory is not None and other.memory is not None
    remember(scoped.memory, "Prefers dark mode.", key="theme")
    assert list_memories(other.memory) == [] and len(list_memories(scoped.memory)) == 1
    assert all("." not in label and "/" not in label for label in scoped.memory.namespace("preferences"))


def test_owner_labels_cannot_collide_across_tenants() -> None:
    assert MemoryConfig(user="acme~bob").namespace("preferences")[1] == "acme%7Ebob"  # not tenant acme's bob
    a = MemoryConfig(user="b", tenant="a~x").namespace("preferences")
    b = MemoryConfig(user="b", tenant="a").namespace("preferences")
    assert a != b and a[1] == "a%7Ex~b" and MemoryConfig(user="b").namespace("preferences")[1] == "b"


def test_a_manager_built_for_a_tenant_scopes_its_memory(tmp_path: Path) -> None:
    memory = MemoryConfig(store=InMemoryStore(), user="alice", agent="coder")
    assert SessionManager(tmp_path / "s", memory=memory).memory is memory  # the default tenant: as configured
    acme = SessionManager(tmp_path / "s", tenant="acme", memory=memory)
    assert acme.memory is not None and acme.memory.tenant == "acme" and acme.memory.user == "alice"
    with pytest.raises(ConfigurationError, match="globex"):
        SessionManager(tmp_path / "s", tenant="acme", memory=memory.for_tenant("globex"))


def test_exports_and_expiry_use_derived_places_never_stored_uris(tmp_path: Path) -> None:
    acme, globex = managers(tmp_path, "acme", "globex")
    assert acme.memory is not None and globex.memory is not None
    remember(globex.memory, "Globex's own note.", "events")
    remember(acme.memory, "Old event.", "events")
    store, namespace = acme.memory.memory_store, acme.memory.namespace("events")
    (item,) = store.search(namespace)
    forged_uri = list_memories(globex.memory, ["events"])[0]["uri"]
    store.put(namespace, item.key, {**item.value, "uri": forged_uri, "expires_at": "2000-01-01T00:00:00+00:00"})
    exported = export_memories(acme.memory, tmp_path / "out", format="openviking")
    copy = MemoryConfig(path=exported, user="acme", agent="coder")  # read back by the namespaces written
    written = {(tuple(i.namespace), i.key) for i in copy.memory_store.search(("user",), limit=100)}
    assert written == {(namespace, item.key)}  # under acme's place, not the URI's
    assert expire(acme.memory) and list_memories(acme.memory, ["events"]) == []
    assert [v["content"] for v in list_memories(globex.memory, ["events"])] == ["Globex's own note."]


def test_a_resumed_tenant_journal_keeps_its_plan_and_usage_and_drops_another_tenant_s() -> None:
    from session_graph.commit.trust import trusted_journal
    from session_graph.memory.plan import create_plan

    acme = MemoryConfig(store=InMemoryStore(), user="alice", agent="coder", tenant="acme")
    candidate = {"category": "preferences", "key": "theme", "abstract": "dark", "content": "Prefers dark mode."}
    uri = f"memory://user/{acme.namespace('preferences')[1]}/preferences/theme"
    journal = {"candidates": [candidate], "plan": create_plan([candidate], [list(acme.namespace("preferences"))]),
               "usage": [{"uri": uri}]}
    kept, reasons = trusted_journal(journal, acme.memory_store, "alice", "coder", tenant="acme")
    assert reasons == [] and kept["plan"] == journal["plan"] and kept["usage"] == [{"uri": uri}]
    other, reasons = trusted_journal(journal, acme.memory_store, "alice", "coder", tenant="globex")
    assert "plan" not in other and other["usage"] == [] and len(reasons) == 2


def test_skill_usage_counts_are_per_tenant() -> None:
    from session_graph import Session

    acme = MemoryConfig(store=InMemoryStore(), user="alice", agent="coder", tenant="acme")
    session = Session("s", memory=acme)
    session.append_message({"role": "user", "content": "hi"})
    session.used(skill={"uri": "viking://agent/skills/code-search", "success": True})
    assert session.commit()["skills_used"] == 1
    assert acme.memory_store.get(("agent", "acme~coder", "skills"), "viking_agent_skills_code_search").value["uses"] == 1
    assert acme.memory_store.get(("agent", "coder", "skills"), "viking_agent_skills_code_search") is None


def test_an_agent_run_of_a_tenant_remembers_and_recalls_for_that_tenant_s_user(tmp_path: Path) -> None:
    from agents_util import ToolCallingFake
    from langchain.agents import create_agent
    from langchain_core.messages import AIMessage, HumanMessage
    from langgraph.checkpoint.memory import InMemorySaver

    from session_graph import Session
    from session_graph.integrations import SessionMiddleware

    acme, globex = managers(tmp_path, "acme", "globex")
    assert acme.memory is not None and globex.memory is not None
    call = {"id": "r1", "name": "remember", "args": {"content": "Bob drinks green tea.", "key": "drink", "terms": "tea, 绿茶"}}
    llm = ToolCallingFake(messages=iter([AIMessage(content="", tool_calls=[call]), AIMessage(content="ok")]))
    agent = create_agent(llm, tools=[], middleware=[SessionMiddleware(Session(), memory=acme.memory, recall_k=0)],
                         checkpointer=InMemorySaver())
    agent.invoke({"messages": [HumanMessage(content="remember my drink")]}, {"configurable": {"thread_id": "t", **RUN_BOB["configurable"]}})
    (stored,) = list_memories(acme.memory.for_user("bob"))
    assert stored["terms"] == ["tea", "绿茶"] and stored["uri"] == "memory://user/acme~bob/preferences/drink"
    assert list_memories(globex.memory.for_user("bob")) == [] and list_memories(acme.memory) == []
