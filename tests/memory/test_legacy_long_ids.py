"""An id over the cap that already owns memories stays usable: before the one id cap
(``_base.ids.MAX_ID_LENGTH``) a user or agent id of any length was accepted, and every store but
Postgres (which takes some 2,600 ASCII characters) kept its memories. After the upgrade that user
must still recall, export and forget them (forgettable means forgettable), in a config and in a
run that names the id; only an over-cap id that owns nothing yet is refused."""

from __future__ import annotations

from pathlib import Path

from memory_util import MEMORY_BACKENDS, make_memory_store
import pytest

from session_graph import InvalidKeyError
from session_graph._base import ids
from session_graph._base.ids import MAX_ID_LENGTH
from session_graph.memory import MemoryConfig
from session_graph.memory.manage import export_memories, forget
from session_graph.memory.recall import recall, remember

LONG = "u" * (MAX_ID_LENGTH + 44)  # 300 characters: an id an older version accepted


@pytest.mark.parametrize("backend", MEMORY_BACKENDS)
def test_an_over_cap_user_who_owns_memories_still_reads_exports_and_forgets_them(
        backend: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store = make_memory_store(backend, tmp_path)
    with monkeypatch.context() as before:  # the version before the cap: no length rule
        before.setattr(ids, "MAX_ID_LENGTH", 10**9)
        remember(MemoryConfig(store=store, user=LONG, tenant="acme"), "The user prefers a dark editor theme.", key="editor theme")
    memory = MemoryConfig(store=store, user=LONG, tenant="acme")  # refused after the upgrade: locked out
    assert [v["key"] for v in recall(memory, "dark editor theme", 3)] == ["editor_theme"]
    assert [v["key"] for v in export_memories(memory)] == ["editor_theme"]
    run = MemoryConfig(store=store, user="alice", tenant="acme").for_run({"configurable": {"user_id": LONG}})
    assert run.user == LONG and [v["key"] for v in recall(run, "dark editor theme", 3)] == ["editor_theme"]
    assert forget(memory, "editor_theme", "preferences") and recall(memory, "dark editor theme", 3) == []
    with pytest.raises(InvalidKeyError, match="MemoryConfig user"):  # a new over-cap id: refused, as before
        MemoryConfig(store=store, user="n" * (MAX_ID_LENGTH + 1), tenant="acme")
    with pytest.raises(InvalidKeyError, match="MemoryConfig user"):  # the same id in another tenant owns nothing
        MemoryConfig(store=store, user=LONG, tenant="globex")
