"""A run naming its tenant (``config["configurable"]["tenant_id"]`` or the runtime context's
``tenant_id``), as it names its user: only where the deployer lets runs choose among tenants
(``MemoryConfig(run_tenants=...)``: a collection of tenants, or a check of the tenant against the
run's configurable), since a run's config is the caller's (LangGraph's server passes the client's
``configurable`` on). Without it, the config's (or manager's) tenant is used and a named one is not
read; a run naming a tenant it may not is refused, never served another tenant's memories.
"""

from __future__ import annotations

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
        scoped = memory.for_run(run({"user_id": "bob", "tenant_id": "globex"}))
        memory.for_run(run({"user_id": "bob", "tenant_id": "globex"}))
    assert (scoped.tenant, scoped.user) == ("acme", "bob")  # the config's tenant: never globex's memories
    warned = [r for r in caplog.records if "run_tenants" in r.getMessage()]
    assert len(warned) == 1 and "globex" in warned[0].getMessage()  # said once, with the fix
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
