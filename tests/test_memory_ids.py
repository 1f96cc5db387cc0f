"""User and agent ids of any text (issue 22): an email, a dotted or slashed id, spaces, unicode,
``~`` name a memory namespace through one reversible encoding (``encode_label``, the tenant's
too). Ids that were valid before (no ``.``, ``/``, NUL) and hold neither ``~`` nor a ``%XX`` keep
the label they always had, so stores written before stay found."""

from __future__ import annotations

import json
from pathlib import Path
import random
from types import SimpleNamespace
from typing import Any

from langchain_core.language_models.fake_chat_models import FakeListChatModel
from langgraph.store.memory import InMemoryStore
from memory_util import MEMORY_BACKENDS, make_memory_store
import pytest

from session_graph import ConfigurationError, Session
from session_graph.memory import FileMemoryStore, MemoryConfig, export_memories, forget, list_memories, memory_history
from session_graph.memory.categories import decode_label, encode_label, memory_uri, owner_of_label, tenant_owner
from session_graph.memory.changes import meta_namespace
from session_graph.memory.recall import recall, remember

ODD_IDS = ["bob@example.com", "a.b", "org/42/alice", "with space", "李雷", "a~b", "~", "..", "/", "100%", "a%41",
           "%2E", "x\x00y", "Zoë.Ünïcode@例子.公司"]


@pytest.fixture(params=MEMORY_BACKENDS)
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Any:
    return make_memory_store(request.param, tmp_path)


@pytest.mark.parametrize("user", ODD_IDS)
def test_any_user_id_text_remembers_recalls_and_forgets(store: Any, user: str) -> None:
    memory = MemoryConfig(store=store, user=user, agent=user)
    assert remember(memory, "Prefers dark mode in the editor.", key="theme") == "created"
    assert remember(memory, "Fixed the flaky CI with strict mode.", "cases") == "created"
    assert [v["content"] for v in recall(memory, "dark mode editor")][:1] == ["Prefers dark mode in the editor."]
    assert remember(memory, "Now prefers light mode in the editor.", key="theme") == "updated"
    assert len(memory_history(memory, "theme", "preferences")) == 2
    namespace = memory.namespace("preferences")
    assert all("." not in label and "/" not in label and "\x00" not in label for label in namespace)
    assert all("." not in label for label in meta_namespace(namespace))  # the change feed's place too
    assert owner_of_label(namespace[1]) == (None, user)
    uri = memory_uri(namespace, "theme")
    assert memory.place_of(uri) == (namespace, "theme")  # the URI parses back to its place
    assert forget(memory, uri) and list_memories(memory, ["preferences"]) == []


def test_labels_never_collide() -> None:
    ids = [*ODD_IDS, "bob.smith", "bob%2Esmith", "bob%252Esmith", "acme~bob", "acme%7Ebob", "bob"]
    labels = {tenant_owner(None, i) for i in ids} | {tenant_owner("acme", i) for i in ids}
    labels |= {tenant_owner("acme~x", i) for i in ids} | {tenant_owner("a.b", i) for i in ids}
    assert len(labels) == 4 * len(ids)
    assert tenant_owner("acme", "bob") != tenant_owner(None, "acme~bob")  # a tenant's bob is not the id "acme~bob"
    assert owner_of_label(tenant_owner("acme~x", "a~b")) == ("acme~x", "a~b")


def test_the_encoding_is_reversible_and_injective_on_random_text() -> None:
    rng = random.Random(22)  # deterministic
    alphabet = ".%/~\x00aF2E7 é李\n:@"
    texts = {"".join(rng.choice(alphabet) for _ in range(rng.randint(1, 8))) for _ in range(5000)}
    labels = {}
    for text in texts:
        label = encode_label(text)
        assert decode_label(label) == text and not set(label) & set("./~\x00")
        assert labels.setdefault(label, text) == text
        for tenant in ("acme", text):
            assert owner_of_label(tenant_owner(tenant, text)) == (tenant, text)


@pytest.mark.parametrize("user", ["alice", "alice smith", "李雷", "100%", "50%off", "user:42", "a@b", "O'Brien"])
def test_ids_valid_before_keep_their_label_and_their_stored_memories(store: Any, user: str) -> None:
    assert encode_label(user) == user
    # written as the code before wrote it: the id itself as the namespace label
    store.put(("user", user, "memories", "preferences"), "theme",
              {"category": "preferences", "key": "theme", "abstract": "Dark mode", "content": "Prefers dark mode.",
               "status": "active", "version": 1})
    memory = MemoryConfig(store=store, user=user)
    assert [v["content"] for v in list_memories(memory)] == ["Prefers dark mode."]
    assert [v["content"] for v in recall(memory, "dark mode")] == ["Prefers dark mode."]
    assert remember(memory, "Prefers dark mode, always.", key="theme") != "created"  # the stored item, found
    assert len(list_memories(memory)) == 1


def test_a_file_store_directory_written_before_is_read(tmp_path: Path) -> None:
    root = tmp_path / "old"
    FileMemoryStore(root, fsync=False).put(("user", "alice smith", "memories", "events"), "ev_1",
                                           {"category": "events", "content": "Flew to Oslo.", "status": "active"})
    assert [v["content"] for v in list_memories(MemoryConfig(path=root, user="alice smith"), ["events"])] == ["Flew to Oslo."]


def test_run_supplied_ids_follow_the_same_rules() -> None:
    memory = MemoryConfig(store=InMemoryStore(), user="default")
    by_config = memory.for_run({"configurable": {"user_id": "bob@example.com", "agent_id": "bot.v2"}})
    assert by_config.user == "bob@example.com" and by_config.namespace("preferences")[1] == "bob@example%2Ecom"
    assert by_config.namespace("cases")[1] == "bot%2Ev2"
    by_context = memory.for_run({}, SimpleNamespace(user_id="carol/ops", agent_id=None))
    assert by_context.namespace("preferences")[1] == "carol%2Fops"
    remember(by_config, "Bob drinks green tea.", key="drink")
    assert list_memories(by_context) == [] and list_memories(memory) == []
    assert [v["content"] for v in list_memories(memory.for_run({"configurable": {"user_id": "bob@example.com"}}))] == [
        "Bob drinks green tea."]
    for bad in ("", 3, None, "\ud800"):
        with pytest.raises(ConfigurationError, match="user"):
            MemoryConfig(user=bad)  # type: ignore[arg-type]


def test_viking_uris_name_an_email_user_as_the_id_its_label_or_percent_encoded() -> None:
    memory = MemoryConfig(store=InMemoryStore(), user="bob@example.com")
    namespace = memory.namespace("preferences")
    for owner in ("bob@example.com", "bob@example%2Ecom", "bob%40example.com"):
        assert memory.place_of(f"viking://user/{owner}/memories/preferences/theme.md") == (namespace, "theme")
    assert memory.place_of("viking://user/alice/memories/preferences/theme.md") is None


def test_exports_and_a_commit_of_an_email_user(tmp_path: Path) -> None:
    memory = MemoryConfig(store=InMemoryStore(), user="bob@example.com", agent="coder")
    reply = json.dumps({"memories": [{"category": "preferences", "key": "editor", "abstract": "Vim", "content": "Prefers Vim."}]})
    session = Session(model=FakeListChatModel(responses=["# Session Summary\n**Overview**: vim | x | done", reply]),
                      memory=memory)
    session.append_message({"role": "user", "content": "I use Vim."})
    assert session.commit()["status"] == "committed"
    (value,) = list_memories(memory)
    assert value["uri"] == "memory://user/bob@example%2Ecom/preferences/editor"
    assert export_memories(memory)[0]["content"] == "Prefers Vim."
    out = export_memories(memory, tmp_path / "ov", format="openviking")
    assert [v["content"] for v in list_memories(MemoryConfig(path=out, user="bob@example.com"))] == ["Prefers Vim."]


def test_an_agent_run_naming_an_email_user_remembers_for_that_user(tmp_path: Path) -> None:
    from agents_util import ToolCallingFake
    from langchain.agents import create_agent
    from langchain_core.messages import AIMessage, HumanMessage
    from langgraph.checkpoint.memory import InMemorySaver

    from session_graph.integrations import SessionMiddleware

    memory = MemoryConfig(store=InMemoryStore(), user="default", agent="coder", tenant="acme.com")
    call = {"id": "r1", "name": "remember", "args": {"content": "Bob drinks green tea.", "key": "drink"}}
    llm = ToolCallingFake(messages=iter([AIMessage(content="", tool_calls=[call]), AIMessage(content="ok")]))
    agent = create_agent(llm, tools=[], middleware=[SessionMiddleware(Session(), memory=memory, recall_k=0)],
                         checkpointer=InMemorySaver())
    agent.invoke({"messages": [HumanMessage(content="remember my drink")]},
                 {"configurable": {"thread_id": "t", "user_id": "bob.smith@example.com"}})
    (stored,) = list_memories(memory.for_user("bob.smith@example.com"))
    assert stored["uri"] == "memory://user/acme%2Ecom~bob%2Esmith@example%2Ecom/preferences/drink"
    assert list_memories(memory) == []
