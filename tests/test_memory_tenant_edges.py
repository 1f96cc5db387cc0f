"""Edges of memory tenancy found in review (issue 22): the ``"default"`` tenant, a migration that
crashes halfway, and what a per-run user of a tenant's manager reads and writes."""

from __future__ import annotations

from pathlib import Path

from langgraph.store.memory import InMemoryStore
import pytest

from session_graph import ConfigurationError, SessionManager
from session_graph.memory import MemoryConfig, list_memories
from session_graph.memory.migrate import migrate_to_tenant
from session_graph.memory.recall import remember


def test_the_default_tenant_is_the_tenantless_place_everywhere(tmp_path: Path) -> None:
    """A SessionManager's ``"default"`` tenant keeps memory at the tenant-less labels; a MemoryConfig
    naming that tenant must mean the same place (not ``default~bob``, which no default manager reads),
    and a migration "under the default tenant" must not move memories where they are never found."""
    store = InMemoryStore()
    plain = MemoryConfig(store=store, user="bob")
    remember(plain, "Bob drinks green tea.", key="drink")
    named = MemoryConfig(store=store, user="bob", tenant="default")
    assert named.namespace("preferences") == plain.namespace("preferences") == ("user", "bob", "memories", "preferences")
    manager = SessionManager(tmp_path / "sessions", memory=named)  # was: "tenant 'default' but ... tenant 'default'"
    assert manager.memory is not None and manager.memory.namespace("preferences") == plain.namespace("preferences")
    assert plain.for_tenant("default").namespace("profile") == plain.namespace("profile")
    with pytest.raises(ConfigurationError, match="already the target"):
        migrate_to_tenant(plain, "default")
    assert [v["content"] for v in list_memories(manager.memory)] == ["Bob drinks green tea."]
