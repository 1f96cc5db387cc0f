"""``migrate-tenant`` of a user whose id is longer than ``MAX_ID_LENGTH``, stored before the cap:
such an id stays usable where it owns memories (``MemoryConfig``'s legacy serving), so it is kept
as it is under the tenant too (``tenant~id``), with its history; after the move the tenant's
config serves it (it owns memories there) and a new over-cap id is still refused."""

from __future__ import annotations

from pathlib import Path

from cli_util import run
from memory_util import MEMORY_BACKENDS, make_memory_store
import pytest

from session_graph import ConfigurationError
from session_graph._base.ids import MAX_ID_LENGTH
from session_graph.memory import FileMemoryStore, MemoryConfig, list_memories, memory_history
import session_graph.memory.config as memory_config
from session_graph.memory.migrate import migrate_to_tenant
from session_graph.memory.recall import recall, remember

LONG = "legacy-user-" + "u" * MAX_ID_LENGTH  # over the cap


def written_before_the_cap(store: object, user: str = LONG) -> MemoryConfig:
    """What a version without the cap wrote for ``user``: a fact updated once (history) and an event."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(memory_config, "MAX_ID_LENGTH", 10 * MAX_ID_LENGTH)  # no cap yet
        old = MemoryConfig(store=store, user=user, agent="coder")  # type: ignore[arg-type]
        remember(old, "Drinks green tea.", key="drink")
        assert remember(old, "Now drinks black coffee.", key="drink") == "updated"
        remember(old, "Flew to Oslo on 12 May.", "events")
    return MemoryConfig(store=store, user=user, agent="coder")  # type: ignore[arg-type]  # served: it owns memories


@pytest.mark.parametrize("backend", MEMORY_BACKENDS)
def test_a_legacy_over_cap_user_migrates_under_a_tenant_keeping_its_id(backend: str, tmp_path: Path) -> None:
    store = make_memory_store(backend, tmp_path)
    old = written_before_the_cap(store)
    with pytest.raises(ConfigurationError):  # the tenant's config alone: a new over-cap id there, refused
        MemoryConfig(store=store, user=LONG, agent="coder", tenant="acme")  # type: ignore[arg-type]
    listing = migrate_to_tenant(old, "acme", dry_run=True)
    assert sorted((r["kind"], r["category"], r["action"]) for r in listing) == [
        ("history", "preferences", "move"), ("item", "events", "move"), ("item", "preferences", "move")]
    assert len(list_memories(old)) == 2  # a dry run changes nothing
    assert migrate_to_tenant(old, "acme") == listing
    acme = MemoryConfig(store=store, user=LONG, agent="coder", tenant="acme")  # type: ignore[arg-type]  # owns memories now
    assert sorted(v["content"] for v in list_memories(acme)) == ["Flew to Oslo on 12 May.", "Now drinks black coffee."]
    assert list_memories(old) == [] and len(memory_history(acme, "drink", "preferences")) == 2
    assert recall(acme, "black coffee")[0]["key"] == "drink"
    assert migrate_to_tenant(old, "acme") == []  # idempotent
    with pytest.raises(ConfigurationError, match=str(MAX_ID_LENGTH)):  # a new over-cap id is still refused
        MemoryConfig(store=store, user="n" * (MAX_ID_LENGTH + 1), agent="coder", tenant="acme")  # type: ignore[arg-type]


def test_the_cli_migrates_a_legacy_over_cap_user(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    files = str(tmp_path / "files")
    written_before_the_cap(FileMemoryStore(files, fsync=False))
    code, out, err = run(capsys, "memory", "migrate-tenant", "--memory", files, "--tenant", "acme", "--user", LONG)
    assert code == 0 and out.splitlines()[-1] == "moved 3, already there 0, conflicts left in place 0", (out, err)
    acme = MemoryConfig(store=FileMemoryStore(files, fsync=False), user=LONG, agent="coder", tenant="acme")
    assert len(list_memories(acme)) == 2


def test_a_legacy_id_too_long_for_postgres_under_the_tenant_is_named_with_the_fix(tmp_path: Path) -> None:
    """LangGraph's Postgres store keys its rows by a btree index (at most 2,704 bytes a row): a legacy
    id that fit there alone can be too long once ``tenant~`` is put before it. The move is refused
    with an error that names the id and the way out (a shorter id, ``from_user``), and nothing is lost."""
    store = make_memory_store("postgres", tmp_path)
    user = "".join(f"{i:04x}" for i in range(600))  # 2,400 chars: stored alone, over the index with the tenant
    old = written_before_the_cap(store, user)
    with pytest.raises(ConfigurationError, match="from_user") as raised:
        migrate_to_tenant(old, "acme-" + "t" * 250)
    assert "too long" in str(raised.value)
    assert sorted(v["content"] for v in list_memories(old)) == ["Flew to Oslo on 12 May.", "Now drinks black coffee."]
    moved = migrate_to_tenant(MemoryConfig(store=store, user="short", agent="coder"), "acme-" + "t" * 250, from_user=user)  # type: ignore[arg-type]
    assert {r["action"] for r in moved} == {"move"} and list_memories(old) == []
