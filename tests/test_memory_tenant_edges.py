"""Edges of memory tenancy found in review (issue 22): the ``"default"`` tenant, a migration that
crashes halfway, and what a per-run user of a tenant's manager reads and writes."""

from __future__ import annotations

from pathlib import Path

from langgraph.store.memory import InMemoryStore
import pytest

from session_graph import ConfigurationError, SessionManager
from session_graph.memory import MemoryConfig, list_memories, memory_history
import session_graph.memory.migrate as migrate
from session_graph.memory.migrate import migrate_to_tenant
from session_graph.memory.recall import recall, remember


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
    with pytest.raises(ConfigurationError, match=r"default tenant.*nothing to move"):
        migrate_to_tenant(plain, "default")
    assert [v["content"] for v in list_memories(manager.memory)] == ["Bob drinks green tea."]


def test_a_migration_that_crashed_after_a_put_is_seen_by_a_running_reader_once_rerun(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A crash between the put at the tenant's place and its change-feed bump: the rerun finds the
    copy (``same``) and must still record it in the feed, or a process that already indexed the
    tenant's (empty) namespace never sees the moved memory and its next remember duplicates it."""
    store = InMemoryStore()
    remember(MemoryConfig(store=store, user="bob"), "Bob drinks green tea every morning.", key="drink")
    tenant = MemoryConfig(store=store, user="bob", tenant="acme")
    assert recall(tenant, "green tea") == []  # a running reader indexes the tenant's empty namespace
    real_bump, calls = migrate.bump, []

    def crash_once(*args: object) -> None:
        calls.append(args)
        if len(calls) == 1:
            raise OSError("killed")
        real_bump(*args)

    monkeypatch.setattr(migrate, "bump", crash_once)
    with pytest.raises(OSError):
        migrate_to_tenant(tenant.for_tenant(None), "acme")
    assert [r["action"] for r in migrate_to_tenant(tenant.for_tenant(None), "acme") if r["kind"] == "item"] == ["same"]
    assert [v["content"] for v in recall(tenant, "green tea")] == ["Bob drinks green tea every morning."]
    assert remember(tenant, "Bob drinks green tea every morning.", key="drink") == "skipped"


def test_the_history_of_an_item_left_in_place_by_a_conflict_stays_with_it() -> None:
    """An item the tenant already holds with other content is left at the old place: its past
    versions must stay with it, not move into the history of the tenant's (different) item."""
    store = InMemoryStore()
    old = MemoryConfig(store=store, user="bob")
    remember(old, "Bob drinks green tea.", key="drink")
    remember(old, "Bob drinks black tea now.", key="drink")
    tenant = MemoryConfig(store=store, user="bob", tenant="acme")
    remember(tenant, "Bob drinks coffee.", key="drink")
    report = migrate_to_tenant(old, "acme")
    assert {(r["kind"], r["key"], r["action"]) for r in report} == {("item", "drink", "conflict"),
                                                                     ("history", "drink@v1", "conflict")}
    assert [v["content"] for v in memory_history(tenant, "drink", "preferences")] == ["Bob drinks coffee."]
    assert [v["content"] for v in memory_history(old, "drink", "preferences")] == ["Bob drinks green tea.",
                                                                                   "Bob drinks black tea now."]
    assert migrate_to_tenant(old, "acme") == report  # rerun: the same, nothing moved
