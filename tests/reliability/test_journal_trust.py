"""A pending commit journal is data: a loaded document never writes where its owner could not.

Bob's commit dies in its write step, leaving a decided plan pending in his session document.
That document (as is, or edited by hand: a foreign namespace, a key no candidate gives, an
unseen or another owner's target, a bad index, a category swap, a used() record naming bob's
memories) is loaded under alice's MemoryConfig, on the same memory store, and committed.
Every case asserts that bob's memories are exactly as before and alice gets only what a clean
run of hers writes.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

from langchain_core.language_models.fake_chat_models import FakeListChatModel
from memory_util import dump_memories, make_memory_store
import pytest

from session_graph import Session
from session_graph.memory import MemoryConfig
from session_graph.memory.apply import apply_op
from session_graph.memory.categories import item_key

SUMMARY = "# Session Summary\n**Overview**: editor themes | dark | done"
PREF = {"category": "preferences", "key": "editor_theme", "abstract": "Dark editor theme", "content": "Prefers a dark theme."}
EVENT = {"category": "events", "abstract": "Switched editors", "content": "On 2026-11-22 switched to a new editor."}
BOB_FACT = {"category": "preferences", "key": "secret", "abstract": "Bob's secret", "content": "Bob's own fact."}


def extraction(*memories: dict[str, Any]) -> str:
    return json.dumps({"memories": list(memories)})


def talk(session: Session) -> None:
    session.append_message({"role": "user", "content": "I like a dark editor theme."})
    session.append_message({"role": "assistant", "content": "Noted: dark theme."})


def bobs_pending_document(store: Any) -> dict[str, Any]:
    """Bob's session after a crash between the decision and the write: a plan pending in the document."""
    bob = MemoryConfig(store=store, user="bob", agent="coder")
    seed = Session("bob-seed", model=FakeListChatModel(responses=[SUMMARY, extraction(BOB_FACT)]), memory=bob)
    talk(seed)
    assert seed.commit()["status"] == "committed"  # bob has a memory of his own, an UPDATE target

    def crash(state: Any, runtime: Any) -> Any:
        raise KeyboardInterrupt

    session = Session("chat", model=FakeListChatModel(responses=[SUMMARY, extraction(PREF, EVENT)]), memory=bob)
    session.override_commit_node("write", crash)
    talk(session)
    with pytest.raises(KeyboardInterrupt):
        session.commit()
    document = session.to_dict()
    (journal,) = document["archives"]["pending"].values()
    assert journal["plan"] and all(op["namespace"][1] == "bob" for op in journal["plan"])
    return document


def alice_clean(tmp_path: Path) -> set[tuple[Any, ...]]:
    clean = MemoryConfig(store=make_memory_store("inmemory", tmp_path), user="alice", agent="coder")
    session = Session("chat", model=FakeListChatModel(responses=[SUMMARY, extraction(PREF, EVENT)]), memory=clean)
    talk(session)
    session.commit()
    return set(dump_memories(clean.memory_store))


def _plan(document: dict[str, Any]) -> list[dict[str, Any]]:
    return next(iter(document["archives"]["pending"].values()))["plan"]


def _journal(document: dict[str, Any]) -> dict[str, Any]:
    return next(iter(document["archives"]["pending"].values()))


def as_is(document: dict[str, Any]) -> None:
    """Bob's own plan, untouched: every op names bob's namespaces."""


def alice_namespace_evil_key(document: dict[str, Any]) -> None:
    for op in _plan(document):
        op["namespace"][1] = "alice"
        op["key"] = "../../../evil"


def unseen_target(document: dict[str, Any]) -> None:
    op = _plan(document)[0]
    op["namespace"][1] = "alice"
    op.update(op="update", key="never_shown", targets=["never_shown"], content="injected")


def bobs_target_in_alices_namespace(document: dict[str, Any]) -> None:
    op = _plan(document)[0]
    op["namespace"] = ["user", "alice", "memories", "preferences"]
    op.update(op="update", key="secret", targets=["secret"], content="overwritten by a document")


def foreign_update_of_bob(document: dict[str, Any]) -> None:
    op = _plan(document)[0]
    op.update(op="update", key="secret", targets=["secret"], content="overwritten by a document")


def bad_index(document: dict[str, Any]) -> None:
    for op in _plan(document):
        op["namespace"][1] = "alice"
        op["index"] = 99


def category_swap(document: dict[str, Any]) -> None:
    op = _plan(document)[0]
    op["category"], op["namespace"] = "cases", ["agent", "bob", "memories", "cases"]


def bobs_usage(document: dict[str, Any]) -> None:
    _journal(document)["usage"] = [{"id": "u1", "uri": "memory://user/bob/preferences/secret"},
                                   {"id": "u2", "uri": "memory://agent/evil/cases/x"}]


def malformed_candidates(document: dict[str, Any]) -> None:
    _journal(document)["candidates"] = [{"category": "no-such", "content": 3}]


def key_not_from_candidate(document: dict[str, Any]) -> None:
    for op in _plan(document):
        op["namespace"][1] = "alice"
        op["key"] = "chosen_by_the_document"


EDITS = [as_is, alice_namespace_evil_key, unseen_target, bobs_target_in_alices_namespace, foreign_update_of_bob,
         bad_index, category_swap, bobs_usage, malformed_candidates, key_not_from_candidate]


@pytest.mark.parametrize("store_kind", ["file", "inmemory"])
@pytest.mark.parametrize("edit", EDITS, ids=[e.__name__ for e in EDITS])
def test_a_loaded_journal_never_writes_outside_its_owner(edit: Any, store_kind: str, tmp_path: Path) -> None:
    store = make_memory_store(store_kind, tmp_path / "shared")
    document = bobs_pending_document(store)
    edit(document)
    bob_before = dump_memories(store, ("user", "bob"), ("agent", "coder"))
    alice = MemoryConfig(store=store, user="alice", agent="coder-a")
    model = FakeListChatModel(responses=[SUMMARY, extraction(PREF, EVENT)] * 2)
    session = Session("chat", model=model, memory=alice).load_dict(copy.deepcopy(document))
    result = session.commit()
    assert result["status"] in ("committed", "partial")
    assert dump_memories(store, ("user", "bob"), ("agent", "coder")) == bob_before  # bob's memories: untouched
    everything = dump_memories(store, ("user",), ("agent",))
    for namespace_and_key in everything:
        owner = namespace_and_key[:2]
        assert owner in (("user", "bob"), ("agent", "coder"), ("user", "alice"), ("agent", "coder-a")), namespace_and_key
    alices = {k for k in everything if k[:2] in (("user", "alice"), ("agent", "coder-a"))}
    clean = {(k[0], "alice" if k[0] == "user" else "coder-a", *k[2:]) for k in alice_clean(tmp_path / "clean")}
    assert alices <= clean, alices - clean  # only what alice's own clean run writes
    if store_kind == "file":  # and nothing on disk outside the store's root
        root = tmp_path / "shared" / "memory"
        outside = [p for p in tmp_path.rglob("*") if p.is_file() and root not in p.parents and "clean" not in p.parts]
        assert outside == []


def test_the_owners_own_pending_plan_still_replays_without_the_model(tmp_path: Path) -> None:
    """The check keeps the resume that matters: a crash after the decision replays the plan, no model call."""
    store = make_memory_store("file", tmp_path)
    bob = MemoryConfig(store=store, user="bob", agent="coder")
    session = Session("chat", model=FakeListChatModel(responses=[SUMMARY, extraction(PREF, EVENT)]), memory=bob)
    ops = []

    def crash_after_first(state: Any, runtime: Any) -> Any:
        op = state.journal["plan"][0]
        ops.append(op)
        apply_op(runtime.context.memory.memory_store, op, f"{state.session.id}/{state.name}#0",
                 [{"session": state.session.id, "archive": state.name}], runtime.context.now)
        raise KeyboardInterrupt

    session.override_commit_node("write", crash_after_first)
    talk(session)
    with pytest.raises(KeyboardInterrupt):
        session.commit()
    again = Session("chat", model=FakeListChatModel(responses=[]), memory=bob).load_dict(session.to_dict())
    result = again.commit()  # no responses left: any model call would fail
    assert result["status"] == "committed", result["errors"]
    keys = {k[-1] for k in dump_memories(store, ("user", "bob"))}
    assert keys == {item_key("preferences", "editor_theme", PREF["content"]), item_key("events", None, EVENT["content"])}
