"""A run naming its tenant (``config["configurable"]["tenant_id"]`` or the runtime context's
``tenant_id``), as it names its user: only where the deployer lets runs choose among tenants
(``MemoryConfig(run_tenants=...)``: a collection of tenants, or a check of the tenant against the
run's configurable), since a run's config is the caller's (LangGraph's server passes the client's
``configurable`` on). Without it, the config's (or manager's) tenant is used and a named one is not
read; a run naming a tenant it may not is refused, never served another tenant's memories.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any, TypedDict

from langgraph.graph import END, START, StateGraph
from langgraph.store.memory import InMemoryStore
import pytest

from session_graph import ConfigurationError, SessionManager
from session_graph.memory import MemoryConfig
from session_graph.memory.recall import recall, remember


def run(configurable: dict[str, Any]) -> dict[str, Any]:
    return {"configurable": configurable}


def facts(memory: MemoryConfig) -> list[str]:
    return [value["content"] for value in recall(memory, "editor theme", 5)]


def test_without_run_tenants_a_named_tenant_is_not_read(caplog: pytest.LogCaptureFixture) -> None:
    memory = MemoryConfig(store=InMemoryStore(), user="alice", tenant="acme")
    with caplog.at_level(logging.WARNING):
        scoped = memory.for_run(run({"user_id": "bob", "tenant_id": "globex-unread"}))  # a name no other test uses:
        memory.for_run(run({"user_id": "bob", "tenant_id": "globex-unread"}))  # the warning is once per process
    assert (scoped.tenant, scoped.user) == ("acme", "bob")  # the config's tenant: never globex's memories
    warned = [r for r in caplog.records if "run_tenants" in r.getMessage()]
    assert len(warned) == 1 and "globex-unread" in warned[0].getMessage()  # said once, with the fix
    assert memory.for_run(run({"tenant_id": "acme"})).tenant == "acme"  # its own tenant: nothing to say
    assert MemoryConfig(user="a").for_run(run({"tenant_id": "default"})).tenant is None  # "default" is the tenant-less place


def test_a_run_names_a_tenant_it_may_choose_and_reads_only_that_tenant_s_memories() -> None:
    store = InMemoryStore()
    memory = MemoryConfig(store=store, user="bob", run_tenants={"acme", "globex"})
    acme = memory.for_run(run({"tenant_id": "acme"}))
    globex = memory.for_run(run({"tenant_id": "globex"}))
    assert (acme.tenant, globex.tenant, memory.for_run(run({})).tenant) == ("acme", "globex", None)
    remember(acme, "The user prefers a dark editor theme.", key="editor theme")
    assert facts(acme) == ["The user prefers a dark editor theme."]
    assert facts(globex) == [] and facts(memory) == []  # tenants never share memory
    with pytest.raises(ConfigurationError) as error:
        memory.for_run(run({"tenant_id": "initech"}))
    text = str(error.value)
    assert "'initech'" in text and "tenant_id" in text and "run_tenants" in text


def test_run_tenants_may_be_a_check_of_the_run_s_configurable() -> None:
    def same_org(tenant: str, configurable: Any) -> bool:  # e.g. what the server's auth put in the run's config
        return tenant == configurable.get("langgraph_auth_org")

    memory = MemoryConfig(store=InMemoryStore(), user="bob", run_tenants=same_org)
    assert memory.for_run(run({"tenant_id": "acme", "langgraph_auth_org": "acme"})).tenant == "acme"
    with pytest.raises(ConfigurationError, match="run_tenants"):
        memory.for_run(run({"tenant_id": "globex", "langgraph_auth_org": "acme"}))


@pytest.mark.parametrize("bad", ["acme", ["acme", ""], 42])
def test_run_tenants_must_be_tenants_or_a_check(bad: Any) -> None:
    with pytest.raises(ConfigurationError, match="run_tenants"):
        MemoryConfig(run_tenants=bad)


def test_a_manager_s_runs_may_name_a_permitted_tenant_inside_a_langgraph_run(tmp_path: Path) -> None:
    memory = MemoryConfig(store=InMemoryStore(), user="bob", run_tenants={"globex"})
    manager = SessionManager(tmp_path / "sessions", tenant="acme", memory=memory)
    assert manager.memory is not None and manager.memory.tenant == "acme"

    class State(TypedDict):
        tenant: str | None

    def node(state: State) -> dict[str, Any]:
        assert manager.memory is not None
        return {"tenant": manager.memory.for_run().tenant}  # the current run's config, read as memory tools do

    graph = StateGraph(State)
    graph.add_node("node", node)
    graph.add_edge(START, "node")
    graph.add_edge("node", END)
    app = graph.compile()
    assert app.invoke({"tenant": None}, {"configurable": {"tenant_id": "globex"}})["tenant"] == "globex"
    assert app.invoke({"tenant": None}, {"configurable": {}})["tenant"] == "acme"
    with pytest.raises(ConfigurationError):
        app.invoke({"tenant": None}, {"configurable": {"tenant_id": "initech"}})


def test_the_tenants_runs_name_in_vain_do_not_grow_the_process(caplog: pytest.LogCaptureFixture,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """Without ``run_tenants`` a named tenant is warned about once; the names are the caller's, so
    a caller naming a new tenant on every run must not grow what the process keeps without bound
    (nor the log: past the bound the warning is not repeated per name)."""
    from session_graph.memory import config

    monkeypatch.setattr(config, "_told", set())  # this process's own: the other tests' warnings stay as they are
    memory = MemoryConfig(store=InMemoryStore(), user="alice", tenant="acme")
    with caplog.at_level(logging.WARNING):
        for n in range(5000):
            assert memory.for_run(run({"tenant_id": f"t{n:04d}-" + "x" * 200})).tenant == "acme"
    assert len(config._told) <= 1024
    assert len([r for r in caplog.records if "run_tenants" in r.getMessage()]) <= 1024


def test_a_manager_s_session_commits_into_the_manager_s_tenant_whatever_the_run_names(tmp_path: Path) -> None:
    """A session a tenant's manager stores is that tenant's: its commit mines it into that tenant's
    memory (``stores/session_commit.py``: "a tenant's sessions commit into that tenant's memory"),
    even inside a run naming another tenant ``run_tenants`` allows. It went to the run's tenant:
    acme's conversation landed in globex's memory, and acme's archive was marked committed, so
    acme never got it. A tenant-less config's commit still follows the run (runs choose there)."""
    from langchain_core.language_models.fake_chat_models import FakeListChatModel
    from langchain_core.messages import AIMessage, HumanMessage

    memory = MemoryConfig(store=InMemoryStore(), user="bob", run_tenants={"acme", "globex"})
    acme = SessionManager(tmp_path / "sessions", tenant="acme", memory=memory)
    fact = {"category": "entities", "key": "launch code", "abstract": "launch code", "content": "The launch code is 4711."}

    def session_of(manager: SessionManager, key: str) -> Any:
        session = manager.get_or_create(key)
        session.append_message(HumanMessage(content="Our launch code is 4711."))
        session.append_message(AIMessage(content="Noted."))
        session.handlers.model = FakeListChatModel(responses=["# Session Summary\n**Overview**: code | noted | done",
                                                              json.dumps({"memories": [fact]})] * 3)
        return session

    class State(TypedDict):
        status: Any

    def graph(commit: Any) -> Any:
        built = StateGraph(State)
        built.add_node("commit", lambda state: {"status": commit()})
        built.add_edge(START, "commit")
        built.add_edge("commit", END)
        return built.compile()

    globex_run = {"configurable": {"tenant_id": "globex"}}
    session = session_of(acme, "k")
    assert graph(lambda: acme.commit(session)["status"]).invoke({"status": None}, globex_run)["status"] == "committed"
    assert facts_of(memory.for_tenant("acme")) == ["The launch code is 4711."]  # the session's own tenant
    assert facts_of(memory.for_tenant("globex")) == []  # never another tenant's memory
    shared = SessionManager(tmp_path / "shared", memory=memory)  # the default tenant: a tenant-less config
    session = session_of(shared, "k")
    assert graph(lambda: shared.commit(session)["status"]).invoke({"status": None}, globex_run)["status"] == "committed"
    assert facts_of(memory.for_tenant("globex")) == ["The launch code is 4711."]  # there the run chooses


def facts_of(memory: MemoryConfig) -> list[str]:
    return [value["content"] for value in recall(memory, "launch code", 5)]
