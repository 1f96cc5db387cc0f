"""Issue 22: memories an older version wrote at a label that is now another owner's (``a~b``,
``bob%2Ecom``) are never read or written as that owner's; new items carry their owner's raw parts."""

from __future__ import annotations

import json
from pathlib import Path

from cli_util import run
from langchain_core.language_models.fake_chat_models import FakeListChatModel
from langgraph.store.memory import InMemoryStore
import pytest

from session_graph import ConfigurationError, SessionManager
from session_graph.integrations.memory_tools import memory_tools
from session_graph.memory import FileMemoryStore, MemoryConfig, export_memories, forget, list_memories, memory_history
from session_graph.memory.migrate import adopt_unmarked, migrate_to_tenant
from session_graph.memory.recall import recall, remember

OLD = {"category": "preferences", "key": "theme", "content": "Prefers dark mode.", "status": "active", "version": 1,
       "abstract": "Prefers dark mode.", "owner": "user/a~b"}  # as an older version wrote it: no owner_id
SUMMARY = "# Session Summary\n**Overview**: editors | x | done"


@pytest.fixture(params=["inmemory", "file"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> object:
    return InMemoryStore() if request.param == "inmemory" else FileMemoryStore(tmp_path / "memory", fsync=False)


def test_new_items_carry_their_owners_raw_parts(store: object) -> None:
    memory = MemoryConfig(store=store, user="bob.com", tenant="a~corp")  # type: ignore[arg-type]
    remember(memory, "Likes tea.", key="drink")
    [value] = list_memories(memory)
    assert value["owner_id"] == {"tenant": "a%7Ecorp", "id": "bob%2Ecom"}  # the parts as the label encodes them
    plain = MemoryConfig(store=store, user="carol")  # type: ignore[arg-type]
    remember(plain, "Likes coffee.", key="drink")
    assert list_memories(plain)[0]["owner_id"] == {"tenant": None, "id": "carol"}


@pytest.mark.parametrize(("old_label", "config"), [("a~b", {"user": "b", "tenant": "a"}),
                                                    ("bob%2Ecom", {"user": "bob.com"})])
def test_an_old_owners_memories_at_an_ambiguous_label_are_refused(store: object, old_label: str,
                                                                  config: dict[str, str]) -> None:
    store.put(("user", old_label, "memories", "preferences"), "theme", {**OLD, "owner": f"user/{old_label}"})  # type: ignore[attr-defined]
    memory = MemoryConfig(store=store, **config)  # type: ignore[arg-type]
    assert memory.namespace("profile")[1] == old_label  # the same label: nothing stored tells them apart
    for use in (lambda: recall(memory, "dark mode"), lambda: list_memories(memory),
                lambda: remember(memory, "Likes tea.", key="drink")):
        with pytest.raises(ConfigurationError) as raised:
            use()
        message = str(raised.value)
        assert old_label in message and "--from-label" in message and "adopt_unmarked" in message
    assert [i.key for i in store.search(("user", old_label, "memories"))] == ["theme"]  # type: ignore[attr-defined]  # nothing written


def test_moving_them_to_their_real_owner_frees_the_label(store: object) -> None:
    store.put(("user", "a~b", "memories", "preferences"), "theme", OLD)  # type: ignore[attr-defined]
    old_user = MemoryConfig(store=store, user="a~b")  # type: ignore[arg-type]  # the id the older version stored as itself
    assert [r["action"] for r in migrate_to_tenant(old_user, None, from_label="a~b")] == ["move"]
    [moved] = list_memories(old_user)
    assert moved["content"] == "Prefers dark mode." and moved["owner_id"] == {"tenant": None, "id": "a%7Eb"}
    new_user = MemoryConfig(store=store, user="b", tenant="a")  # type: ignore[arg-type]
    assert list_memories(new_user) == [] and recall(new_user, "dark mode") == []


def test_adopting_them_marks_them_as_this_owners(store: object) -> None:
    store.put(("user", "a~b", "memories", "preferences"), "theme", OLD)  # type: ignore[attr-defined]
    memory = MemoryConfig(store=store, user="b", tenant="a")  # type: ignore[arg-type]
    assert [r["key"] for r in adopt_unmarked(memory, dry_run=True)] == ["theme"]
    with pytest.raises(ConfigurationError):
        list_memories(memory)  # a dry run changes nothing
    assert [r["key"] for r in adopt_unmarked(memory)] == ["theme"] and adopt_unmarked(memory) == []
    assert [v["owner_id"] for v in list_memories(memory)] == [{"tenant": "a", "id": "b"}]
    assert [h["key"] for h in recall(memory, "dark mode")] == ["theme"]


def test_marked_items_and_unambiguous_labels_pass(store: object) -> None:
    memory = MemoryConfig(store=store, user="b", tenant="a")  # type: ignore[arg-type]
    remember(memory, "Likes tea.", key="drink")
    assert [v["key"] for v in list_memories(memory)] == ["drink"]  # its own items: marked
    store.put(("user", "bob", "memories", "preferences"), "theme", {**OLD, "owner": "user/bob"})  # type: ignore[attr-defined]
    assert [v["key"] for v in list_memories(MemoryConfig(store=store, user="bob"))] == ["theme"]  # type: ignore[arg-type]


def test_the_cli_adopts_them_on_a_file_store(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    files = tmp_path / "files"
    FileMemoryStore(files, fsync=False).put(("user", "a~b", "memories", "preferences"), "theme", OLD)
    memory = MemoryConfig(store=FileMemoryStore(files, fsync=False), user="b", tenant="a")
    with pytest.raises(ConfigurationError, match="migrate-tenant --memory PATH --user 'a~b' --from-label 'a~b'"):
        list_memories(memory)
    code, out, _ = run(capsys, "memory", "migrate-tenant", "--memory", str(files), "--tenant", "a", "--user", "b", "--adopt")
    assert code == 0 and "adopt\tpreferences/theme\tuser/a~b/memories/preferences" in out and "adopted 1" in out
    again = MemoryConfig(store=FileMemoryStore(files, fsync=False), user="b", tenant="a")
    assert [v["owner_id"] for v in list_memories(again)] == [{"tenant": "a", "id": "b"}]


def test_every_reader_and_writer_is_refused_not_only_recall(store: object, tmp_path: Path) -> None:
    store.put(("user", "a~b", "memories", "preferences"), "theme", OLD)  # type: ignore[attr-defined]
    memory = MemoryConfig(store=store, user="b", tenant="a")  # type: ignore[arg-type]
    for use in (lambda: memory_history(memory, "theme", "preferences"), lambda: forget(memory, "theme", "preferences"),
                lambda: export_memories(memory, tmp_path / "out.json")):
        with pytest.raises(ConfigurationError, match="from-label"):
            use()
    tools = {tool.name: tool for tool in memory_tools(memory)}
    with pytest.raises(ConfigurationError, match="from-label"):  # as recall: a misconfigured store fails loudly
        tools["search_memory"].invoke({"query": "dark mode"})
    for name, args in (("remember", {"content": "Likes tea.", "key": "drink"}),  # a refused argument's answer
                       ("forget_memory", {"memory_id": "theme", "category": "preferences"})):
        answer = str(tools[name].invoke(args))
        assert "a~b" in answer and "Prefers dark mode" not in answer, (name, answer)
    assert [i.value for i in store.search(("user", "a~b", "memories"))] == [OLD]  # type: ignore[attr-defined]


def test_a_tenant_s_commit_stops_partial_before_it_reads_or_writes_the_old_owner_s_memories(tmp_path: Path) -> None:
    store = InMemoryStore()
    store.put(("user", "acme~alice", "memories", "preferences"), "editor", {**OLD, "key": "editor", "content": "Prefers Emacs."})
    reply = json.dumps({"memories": [{"category": "preferences", "key": "editor", "abstract": "Vim", "content": "Prefers Vim."}]})
    memory = MemoryConfig(store=store, user="alice", agent="coder", model=FakeListChatModel(responses=[SUMMARY, reply]))
    acme = SessionManager(tmp_path / "sessions", memory=memory).for_tenant("acme")
    session = acme.get_or_create("s1")
    session.append_message({"role": "user", "content": "I use Vim."})
    result = acme.commit(session)  # the archive stays pending: the next commit after the fix resumes it
    assert result["status"] == "partial" and "ConfigurationError" in str(result["errors"]) and "--from-label" in str(result["errors"])
    assert result["memories"]["created"] == result["memories"]["updated"] == []
    assert [i.value["content"] for i in store.search(("user", "acme~alice", "memories"))] == ["Prefers Emacs."]
