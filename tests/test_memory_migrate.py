"""The tenant relabel's upgrade path (issue 22): memories written before tenancy (at the user's own
id, or at the tenant's id as ``SessionManager.for_tenant`` used it) are found by nothing once every
tenant owner is ``tenant~id``; the old place may mix tenants, so nothing moves by itself. The
operator moves a user's old-place memories under a named tenant (``migrate_to_tenant``, ``python3
-m session_graph memory migrate-tenant``): items and their history, dry run first, idempotent,
never overwriting what the tenant holds; a tenant's config that finds its memories empty while an
old place holds some says so once."""

from __future__ import annotations

import json
import logging
from pathlib import Path
import sqlite3

from cli_util import run
from langgraph.store.memory import InMemoryStore
from langgraph.store.sqlite import SqliteStore
from memory_util import MEMORY_BACKENDS, make_memory_store
import pytest

from session_graph import ConfigurationError
from session_graph.memory import FileMemoryStore, MemoryConfig, list_memories, memory_history
from session_graph.memory.categories import encode_label
from session_graph.memory.migrate import migrate_to_tenant
from session_graph.memory.recall import recall, remember

WARNING = "written before tenancy"


def written_before(store: object, user: str = "bob") -> MemoryConfig:
    """What a tenant-less config wrote (the code path every store written before tenancy used):
    a fact, updated once (so it has history), and an event."""
    old = MemoryConfig(store=store, user=user, agent="coder")  # type: ignore[arg-type]
    remember(old, "Bob drinks green tea.", key="drink")
    assert remember(old, "Bob now drinks black coffee.", key="drink") == "updated"
    remember(old, "Bob flew to Oslo on 12 May.", "events")
    assert old.namespace("preferences") == ("user", encode_label(user), "memories", "preferences")  # "bob": the id itself
    return old


@pytest.fixture(params=MEMORY_BACKENDS)
def store(request: pytest.FixtureRequest, tmp_path: Path) -> object:
    return make_memory_store(request.param, tmp_path)


def test_a_dry_run_lists_then_the_move_keeps_items_history_and_citations(store: object) -> None:
    old = written_before(store)
    acme = MemoryConfig(store=store, user="bob", agent="coder", tenant="acme")  # type: ignore[arg-type]
    assert list_memories(acme) == [] and recall(acme, "coffee") == []  # the cause: nothing finds them
    before = {v["key"]: v for v in list_memories(old)}
    listing = migrate_to_tenant(acme, "acme", dry_run=True)
    assert sorted((r["kind"], r["category"], r["key"], r["action"]) for r in listing) == [
        ("history", "preferences", "drink@v1", "move"), ("item", "events", next(k for k in before if k.startswith("ev_")), "move"),
        ("item", "preferences", "drink", "move")]
    assert {r["to"] for r in listing} >= {"user/acme~bob/memories/preferences"}
    assert list_memories(acme) == [] and len(list_memories(old)) == 2  # a dry run changes nothing
    assert migrate_to_tenant(acme, "acme") == listing
    moved = {v["key"]: v for v in list_memories(acme)}
    assert moved.keys() == before.keys() and list_memories(old) == [] and memory_history(old, "drink", "preferences") == []
    assert moved["drink"]["uri"] == "memory://user/acme~bob/preferences/drink"
    assert moved["drink"]["sources"] == before["drink"]["sources"] and moved["drink"]["version"] == 2
    assert [(v["content"], v["uri"]) for v in memory_history(acme, "drink", "preferences")] == [
        ("Bob drinks green tea.", moved["drink"]["uri"]), ("Bob now drinks black coffee.", moved["drink"]["uri"])]
    assert recall(acme, "black coffee")[0]["key"] == "drink"  # the tenant's index saw the move (change feed)
    assert remember(acme, "Bob now drinks black coffee.", key="drink") == "skipped"
    assert migrate_to_tenant(acme, "acme") == []  # idempotent: nothing more to move


def test_the_move_never_overwrites_the_tenant_and_leaves_other_owners_alone(store: object) -> None:
    written_before(store)
    written_before(store, "carol")
    acme = MemoryConfig(store=store, user="bob", agent="coder", tenant="acme")  # type: ignore[arg-type]
    remember(acme, "Bob drinks water only.", key="drink")  # the tenant already holds another text at that key
    report = {(r["kind"], r["key"]): r["action"] for r in migrate_to_tenant(acme, "acme")}
    # the item stays, and its past versions with it (moved, they would read as the past of the tenant's other item)
    assert report[("item", "drink")] == "conflict" and report[("history", "drink@v1")] == "conflict"
    assert [v["content"] for v in list_memories(acme, ["preferences"])] == ["Bob drinks water only."]
    old = MemoryConfig(store=store, user="bob")  # type: ignore[arg-type]
    assert [v["content"] for v in list_memories(old)] == ["Bob now drinks black coffee."]  # left for the operator
    assert len(list_memories(MemoryConfig(store=store, user="carol"))) == 2  # type: ignore[arg-type]
    assert list_memories(MemoryConfig(store=store, user="bob", tenant="globex")) == []  # type: ignore[arg-type]


def test_a_move_interrupted_after_the_copy_finishes_on_the_next_run() -> None:
    store = InMemoryStore()
    old = written_before(store)
    acme = MemoryConfig(store=store, user="bob", tenant="acme")
    migrate_to_tenant(acme, "acme")
    item = store.get(acme.namespace("preferences"), "drink")
    assert item is not None
    # as if the process died between the copy and the delete: the old copy is back
    store.put(old.namespace("preferences"), "drink", {**item.value, "uri": "memory://user/bob/preferences/drink"})
    assert [(r["key"], r["action"]) for r in migrate_to_tenant(acme, "acme")] == [("drink", "same")]
    assert list_memories(old) == [] and len(list_memories(acme, ["preferences"])) == 1


def test_what_for_tenant_wrote_as_its_user_moves_with_from_user(store: object) -> None:
    written_before(store, "acme")  # SessionManager.for_tenant("acme") wrote as a user named acme
    alice = MemoryConfig(store=store, user="alice", tenant="acme")  # type: ignore[arg-type]
    report = migrate_to_tenant(alice, "acme", from_user="acme")
    assert {r["to"] for r in report} == {"user/acme~alice/memories/preferences", "user/acme~alice/memories_history/preferences",
                                         "user/acme~alice/memories/events"}
    assert len(list_memories(alice)) == 2


def test_an_empty_tenant_namespace_beside_old_memories_warns_once(store: object, caplog: pytest.LogCaptureFixture) -> None:
    written_before(store)
    acme = MemoryConfig(store=store, user="bob", tenant="acme")  # type: ignore[arg-type]
    with caplog.at_level(logging.WARNING, logger="session_graph.memory.migrate"):
        recall(acme, "coffee")
        recall(acme, "tea")
        remember(acme.for_user("bob"), "Bob likes jazz.", key="music")
        recall(MemoryConfig(store=store, user="dave", tenant="acme"), "tea")  # type: ignore[arg-type]  # nothing old
    lines = [r.getMessage() for r in caplog.records if WARNING in r.getMessage()]
    assert len(lines) == 1 and "\n" not in lines[0]
    assert "memory migrate-tenant" in lines[0] and "--tenant acme --user bob --from-user bob" in lines[0]


def test_the_cli_dry_run_then_move_on_a_file_store_and_a_sqlite_store(tmp_path: Path,
                                                                      capsys: pytest.CaptureFixture[str]) -> None:
    conn = sqlite3.connect(tmp_path / "memory.db", check_same_thread=False, isolation_level=None)
    sqlite = SqliteStore(conn)
    sqlite.setup()
    for where, backend in ((str(tmp_path / "files"), FileMemoryStore(tmp_path / "files", fsync=False)),
                           (str(tmp_path / "memory.db"), sqlite)):
        written_before(backend, "bob@example.com")
        base = ["memory", "migrate-tenant", "--memory", where, "--tenant", "acme", "--user", "bob@example.com"]
        code, out, _ = run(capsys, *base, "--dry-run")
        assert code == 0 and "move\titem\tpreferences/drink\tuser/bob@example%2Ecom/memories/preferences -> " \
                             "user/acme~bob@example%2Ecom/memories/preferences" in out
        assert out.splitlines()[-1] == "would move 3, already there 0, conflicts left in place 0 (dry run: nothing changed)"
        code, out, _ = run(capsys, *base, "--json", "--dry-run")
        assert code == 0 and len(json.loads(out)) == 3
        code, out, _ = run(capsys, *base)
        assert code == 0 and out.splitlines()[-1] == "moved 3, already there 0, conflicts left in place 0"
        moved = MemoryConfig(store=backend, user="bob@example.com", tenant="acme")
        assert len(list_memories(moved)) == 2
    conn.close()
    files = str(tmp_path / "files")
    FileMemoryStore(files, fsync=False).put(("user", "x~y", "memories", "events"), "ev_1",
                                            {"category": "events", "content": "Flew.", "status": "active", "version": 1})
    code, out, _ = run(capsys, "memory", "migrate-tenant", "--memory", files, "--user", "x~y", "--from-label", "x~y")
    assert code == 0 and "move\titem\tevents/ev_1\tuser/x~y/memories/events -> user/x%7Ey/memories/events" in out
    code, _, err = run(capsys, "memory", "migrate-tenant", "--memory", files, "--user", "b")
    assert code == 1 and "needs the tenant" in err
    code, _, err = run(capsys, "memory", "migrate-tenant", "--memory", str(tmp_path / "nowhere"), "--tenant", "a", "--user", "b")
    assert code == 1 and "no memory store directory" in err and not (tmp_path / "nowhere").exists()


def test_an_id_whose_label_changed_is_relabelled_by_its_old_label(store: object, capsys: pytest.CaptureFixture[str]) -> None:
    store.put(("user", "x~y", "memories", "preferences"), "theme",  # type: ignore[attr-defined]
              {"category": "preferences", "key": "theme", "content": "Prefers dark mode.", "status": "active", "version": 1})
    user = MemoryConfig(store=store, user="x~y")  # type: ignore[arg-type]
    assert user.namespace("preferences")[1] == "x%7Ey" and list_memories(user) == []  # written as the id, now encoded
    assert [r["action"] for r in migrate_to_tenant(user, None, from_label="x~y")] == ["move"]
    assert [v["content"] for v in list_memories(user)] == ["Prefers dark mode."]
    assert list_memories(MemoryConfig(store=store, user="y", tenant="x")) == []  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError, match="tenant"):
        migrate_to_tenant(user, None)
    with pytest.raises(ConfigurationError, match="not both"):
        migrate_to_tenant(user, "acme", from_user="x", from_label="x~y")
