"""One length rule for every free-text identifier that becomes a store key or namespace: a session
key, a tenant, a user id, an agent id (given to a config, a manager, or named by a run) is at most
``MAX_ID_LENGTH`` characters; a longer one is refused before anything is stored, with a
``ConfigurationError`` (an ``InvalidKeyError``) naming the argument, its length, the cap and the fix.

Why a cap: each becomes a Postgres btree key (LangGraph's store keys on ``(prefix, key)``, ours on
``(tenant, key)``) and a btree entry is bounded (~2.7 kB); a 1 MB id made every write fail there.
At the cap the worst case (4-byte characters in the tenant and the user id) still fits: the last
test stores and reads one on every memory backend (Postgres in CI).
"""

from __future__ import annotations

from pathlib import Path

from memory_util import MEMORY_BACKENDS, make_memory_store
import pytest

from session_graph import ConfigurationError, InvalidKeyError, SessionManager
from session_graph._base.ids import MAX_ID_LENGTH
from session_graph.memory import MemoryConfig
from session_graph.memory.recall import recall, remember

HUGE = "x" * 1_000_000


def refused(error: pytest.ExceptionInfo[BaseException], argument: str, length: int) -> None:
    text = str(error.value)
    assert isinstance(error.value, ConfigurationError) and isinstance(error.value, InvalidKeyError)
    assert argument in text and f"{length:,}" in text and str(MAX_ID_LENGTH) in text and "sha256" in text, text
    assert len(text) < 600  # the id itself is not echoed in full


@pytest.mark.parametrize("argument", ["user", "agent", "tenant"])
def test_a_memory_config_refuses_an_id_over_the_cap(argument: str) -> None:
    with pytest.raises(ConfigurationError) as error:
        MemoryConfig(**{argument: HUGE})  # type: ignore[arg-type]
    refused(error, f"MemoryConfig {argument}", len(HUGE))
    MemoryConfig(**{argument: "y" * MAX_ID_LENGTH})  # type: ignore[arg-type]  # at the cap: fine


def test_an_id_a_run_names_is_capped_and_named_by_its_key() -> None:
    memory = MemoryConfig(user="alice")
    with pytest.raises(ConfigurationError) as error:
        memory.for_run({"configurable": {"user_id": HUGE}})
    refused(error, "user_id", len(HUGE))
    with pytest.raises(ConfigurationError) as error:
        memory.for_run({"configurable": {}}, context={"agent_id": "a" * (MAX_ID_LENGTH + 1)})
    refused(error, "agent_id", MAX_ID_LENGTH + 1)
    assert memory.for_run({"configurable": {"user_id": "b" * MAX_ID_LENGTH}}).user == "b" * MAX_ID_LENGTH


def test_session_keys_and_tenants_follow_the_same_rule(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError) as error:
        SessionManager(tmp_path / "store", tenant=HUGE)
    refused(error, "tenant", len(HUGE))
    manager = SessionManager(tmp_path / "store")
    with pytest.raises(ConfigurationError) as error:
        manager.get_or_create(HUGE)
    refused(error, "session key", len(HUGE))
    assert not (tmp_path / "store").exists() or not any((tmp_path / "store").rglob("*.jsonl"))  # nothing stored


@pytest.mark.parametrize("backend", MEMORY_BACKENDS)
def test_ids_at_the_cap_are_stored_and_read_back(backend: str, tmp_path: Path) -> None:
    wide = "\U0001f600" * MAX_ID_LENGTH  # 4 bytes each in UTF-8: the longest label an id at the cap makes
    memory = MemoryConfig(store=make_memory_store(backend, tmp_path), user=wide, agent=wide, tenant="\U0001f601" * MAX_ID_LENGTH)
    remember(memory, "The user prefers dark mode in the editor.", key="editor theme")
    assert [value["key"] for value in recall(memory, "editor dark mode", 3)] == ["editor_theme"]
