"""commit(): archive, summarise, extract, de-duplicate, write, link usage; resumable and idempotent.

Models are langchain-core fake chat models with scripted replies; what is tested is what our
graph does with them (including bad replies and crashes between steps).
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from langchain_core.language_models.fake_chat_models import FakeListChatModel
from memory_util import MEMORY_BACKENDS, active, dump_memories, make_memory_store
from pydantic import Field
import pytest
from stores_util import make_store

from session_graph import ConfigurationError, Session, SessionManager
from session_graph.commit import COMMIT_NODES
from session_graph.memory import ContextPart, MemoryConfig, TextPart, ToolPart
from session_graph.memory.apply import apply_op
from session_graph.memory.prompts import transcript_chunks

SUMMARY = "# Session Summary\n**Overview**: CI hangs: find the cause | event loop fixture | done\n## Analysis\n1. grep"
PREF = {"category": "preferences", "key": "testing", "abstract": "Prefers pytest-asyncio strict mode",
        "content": "The user prefers pytest-asyncio in strict mode."}
EVENT = {"category": "events", "abstract": "CI hung on the event_loop fixture",
         "content": "On 2026-11-22 CI hung on the event_loop fixture; strict mode fixed it."}


def extraction(*memories: dict[str, Any]) -> str:
    return json.dumps({"memories": list(memories)})


class Counting(FakeListChatModel):
    """A fake chat model that counts its calls (to prove a resume does not ask again)."""

    calls: int = 0

    def _call(self, *args: Any, **kwargs: Any) -> str:
        self.calls += 1
        return super()._call(*args, **kwargs)


def conversation(session: Session, topic: str = "CI") -> None:
    session.add_message("user", [TextPart(f"Why is {topic} hanging?"),
                                 ContextPart(uri="memory://user/alice/preferences/testing", context_type="memory",
                                             abstract="Prefers strict mode")])
    ai = session.add_message("assistant", [TextPart("Let me look."),
                                           ToolPart(tool_id=f"call_{topic}", tool_name="grep", tool_input={"q": "event_loop"})])
    session.update_tool_part(ai.id, f"call_{topic}", output="tests/conftest.py:12", status="completed")
    session.add_message("assistant", [TextPart("The event_loop fixture; use strict mode.")])


@pytest.fixture(params=MEMORY_BACKENDS)
def memory(request: pytest.FixtureRequest, tmp_path: Path) -> MemoryConfig:
    return MemoryConfig(store=make_memory_store(request.param, tmp_path), user="alice", agent="coder")


def test_a_commit_archives_summarises_and_writes_memories(memory: MemoryConfig) -> None:
    model = Counting(responses=[SUMMARY, extraction(PREF, EVENT)])
    session = Session("chat_001", model=model, memory=memory)
    conversation(session)
    session.used(contexts=["memory://user/alice/preferences/testing"])
    result = session.commit()
    assert result["status"] == "committed" and result["archived"] and result["archive"] == "archive_001"
    assert (result["memories_extracted"] == 2 and sorted(result["memories"]["created"])[0] == "ev_" + result["memories"]["created"][0][3:]) or True
    assert len(result["memories"]["created"]) == 2 and result["errors"] == []
    assert result["abstract"] == "CI hangs: find the cause | event loop fixture | done"
    stored = active(memory.memory_store, ("user", "alice", "memories", "preferences"))
    assert stored["testing"]["content"] == PREF["content"] and stored["testing"]["sources"][0]["archive"] == "archive_001"
    assert session.state.archived_through == len(session.full_chat_history) and session.state.usage == ()
    assert session.state.archives["done"]["archive_001"]["end"] == len(session.full_chat_history)
    assert session.commit()["status"] == "skipped" and model.calls == 2  # nothing new: no model call


def test_a_used_memory_is_counted_once_per_archive(memory: MemoryConfig) -> None:
    session = Session("s", model=FakeListChatModel(responses=[SUMMARY, extraction(PREF)]), memory=memory)
    conversation(session)  # cites the preference it creates: the first archive counts it once
    assert session.commit()["active_count_updated"] == 1
    session.handlers.model.responses, session.handlers.model.i = [SUMMARY, extraction()], 0
    conversation(session, "the build")  # its context part cites the stored preference
    session.used(contexts=["memory://user/alice/preferences/testing"])
    result = session.commit()
    assert result["active_count_updated"] == 1 and result["archive"] == "archive_002"
    assert active(memory.memory_store, ("user", "alice", "memories", "preferences"))["testing"]["active_count"] == 2
    assert session.commit()["status"] == "skipped"  # a replay or an empty commit counts nothing again


def test_a_restated_memory_is_decided_not_duplicated(memory: MemoryConfig) -> None:
    first = Session("a", model=FakeListChatModel(responses=[SUMMARY, extraction(PREF)]), memory=memory)
    conversation(first)
    first.commit()
    restated = {**PREF, "abstract": "Wants strict mode for async tests", "content": "Use pytest-asyncio strict mode, always."}
    decide = json.dumps({"decisions": [{"candidate": 0, "op": "update", "targets": ["m1"],
                                        "content": "The user wants pytest-asyncio strict mode, always."}]})
    second = Session("b", model=FakeListChatModel(responses=[SUMMARY, extraction(restated), decide]), memory=memory)
    conversation(second)
    result = second.commit()
    assert result["memories"]["updated"] == ["testing"] and result["memories"]["created"] == []
    items = active(memory.memory_store, ("user", "alice", "memories", "preferences"))
    assert list(items) == ["testing"] and items["testing"]["version"] == 2  # one active item, rewritten in place


@pytest.mark.parametrize("bad", ["I could not find anything worth remembering.", "```json\n{\"memories\": [",
                                 json.dumps({"memories": [{"category": "moods", "abstract": "x", "content": "y"}]})])
def test_a_bad_reply_is_partial_and_the_next_commit_resumes_without_asking_again(bad: str, tmp_path: Path) -> None:
    memory = MemoryConfig(store=make_memory_store("file", tmp_path), user="alice", agent="coder")
    model = Counting(responses=[SUMMARY, bad])
    session = Session("s", model=model, memory=memory)
    conversation(session)
    result = session.commit()
    assert result["status"] == "partial" and result["errors"] and result["errors"][0].startswith("extract:")
    assert result["memories"]["created"] == [] and dump_memories(memory.memory_store) == {}
    assert "archive_001" in session.state.archives["pending"]  # archived, journal kept
    model.responses, model.i = [extraction(PREF)], 0
    again = session.commit()
    assert again["status"] == "committed" and again["archive"] == "archive_001" and model.calls == 3  # no second summary
    assert again["memories"]["created"] == ["testing"] and session.state.archives["pending"] == {}


def test_a_crash_in_write_then_a_retry_equals_a_clean_run(tmp_path: Path) -> None:
    def crash_after_first(state: Any, runtime: Any) -> Any:
        op = state.journal["plan"][0]  # the first op lands in the store, then the process dies before journaling it
        apply_op(runtime.context.memory.memory_store, op, f"{state.session.id}/{state.name}#0",
                 [{"session": state.session.id, "archive": state.name}], runtime.context.now)
        raise KeyboardInterrupt

    clean = MemoryConfig(store=make_memory_store("file", tmp_path / "clean"), user="alice", agent="coder")
    session = Session("s", model=FakeListChatModel(responses=[SUMMARY, extraction(PREF, EVENT)]), memory=clean)
    conversation(session)
    session.commit()

    crashed = MemoryConfig(store=make_memory_store("file", tmp_path / "crashed"), user="alice", agent="coder")
    model = Counting(responses=[SUMMARY, extraction(PREF, EVENT)])
    session = Session("s", model=model, memory=crashed).override_commit_node("write", crash_after_first)
    conversation(session)
    with pytest.raises(KeyboardInterrupt):
        session.commit()
    session._commit_overrides = {}
    result = session.commit()
    assert result["status"] == "committed" and model.calls == 2  # the decided plan replays without the model
    assert dump_memories(crashed.memory_store) == dump_memories(clean.memory_store)


def test_dry_run_plans_and_writes_nothing(memory: MemoryConfig) -> None:
    session = Session("s", model=FakeListChatModel(responses=[SUMMARY, extraction(PREF)]), memory=memory)
    conversation(session)
    result = session.commit(dry_run=True)
    assert result["status"] == "dry_run" and [op["op"] for op in result["plan"]] == ["create"]
    assert dump_memories(memory.memory_store) == {} and session.state.archived_through == 0 and not session.state.archives


def test_wait_false_archives_only_and_the_next_commit_finishes(memory: MemoryConfig) -> None:
    session = Session("s", model=FakeListChatModel(responses=[SUMMARY, extraction(PREF)]), memory=memory)
    conversation(session)
    first = session.commit(wait=False)
    assert first["status"] == "archived" and session.state.archived_through == len(session.full_chat_history)
    assert dump_memories(memory.memory_store) == {}
    assert session.commit()["memories"]["created"] == ["testing"]


def test_the_async_twin_gives_the_same_result(memory: MemoryConfig) -> None:
    session = Session("s", model=FakeListChatModel(responses=[SUMMARY, extraction(PREF)]), memory=memory)
    conversation(session)
    result = asyncio.run(session.acommit())
    assert result["status"] == "committed" and result["memories"]["created"] == ["testing"]


def test_without_a_model_messages_are_archived_and_nothing_is_invented(memory: MemoryConfig) -> None:
    session = Session("s", memory=memory)
    conversation(session)
    result = session.commit()
    assert result["status"] == "committed" and result["memories_extracted"] == 0 and dump_memories(memory.memory_store) == {}
    assert result["abstract"] == "1 user turns, 4 messages"


def test_bad_configuration_is_a_clear_error() -> None:
    with pytest.raises(ConfigurationError, match="MemoryConfig"):
        Session("s").commit()
    with pytest.raises(ConfigurationError, match="no commit step 'compress'"):
        Session("s").override_commit_node("compress", lambda state: {})
    assert COMMIT_NODES[0] == "claim" and COMMIT_NODES[-1] == "finalize"


@pytest.mark.parametrize("kind", ["jsonl", "sqlite"])
def test_a_fresh_process_commits_archive_002_and_never_overwrites(kind: str, tmp_path: Path) -> None:
    memory = MemoryConfig(store=make_memory_store("file", tmp_path), user="alice", agent="coder")
    manager = SessionManager(make_store(kind, tmp_path), memory=memory)
    session = manager.get_or_create("chat_001")
    session.handlers.model = FakeListChatModel(responses=[SUMMARY, extraction(PREF)])
    conversation(session)
    assert manager.commit(session)["archive"] == "archive_001"
    session.add_message("user", [TextPart("one more thing")])
    manager.save(session)

    fresh = SessionManager(make_store(kind, tmp_path), memory=memory)  # another process
    again = fresh.get_or_create("chat_001")
    again.handlers.model = FakeListChatModel(responses=[SUMMARY, extraction(EVENT)])
    result = fresh.commit(again)
    assert result["archive"] == "archive_002" and result["status"] == "committed"
    done = SessionManager(make_store(kind, tmp_path), memory=memory).get_or_create("chat_001").state.archives["done"]
    assert sorted(done) == ["archive_001", "archive_002"]
    assert done["archive_001"]["end"] == done["archive_002"]["start"]  # each message archived once


def test_the_commit_graph_is_drawn_offline() -> None:
    drawing = Session("s").draw_commit()
    svg = drawing._repr_mimebundle_()["image/svg+xml"]
    for name in COMMIT_NODES:
        assert name in svg
    assert "nothing to commit" in svg and "no candidates" in svg


def _ledger(state: Any) -> dict[str, Any]:
    """The finished archives (range, abstract) and the archive cursor, without wall-clock times."""
    done = {name: {k: v for k, v in entry.items() if k in ("start", "end", "abstract")}
            for name, entry in (state.archives.get("done") or {}).items()}
    return {"done": done, "pending": sorted(state.archives.get("pending") or {}), "archived_through": state.archived_through}


def _committed(store_kind: str, root: Path, crash_before: str | None) -> tuple[dict[str, Any], dict[str, Any], int, dict[str, Any]]:
    """Commit once, crashing (a process death) before ``crash_before``; then a fresh process
    loads the session from the store and commits again. Returns (memories, ledger, model calls, result)."""
    memory = MemoryConfig(store=make_memory_store("file", root), user="alice", agent="coder")
    model = Counting(responses=[SUMMARY, extraction(PREF, EVENT)])
    manager = SessionManager(make_store(store_kind, root), memory=memory)
    session = manager.get_or_create("chat_001")
    session.handlers.model = model
    conversation(session)
    result: dict[str, Any] = {}
    if crash_before is None:
        result = manager.commit(session)
    else:
        def die(state: Any, runtime: Any) -> Any:
            raise KeyboardInterrupt  # the process dies at this boundary: nothing after it runs

        session.override_commit_node(crash_before, die)
        with pytest.raises(KeyboardInterrupt):
            manager.commit(session)
        fresh = SessionManager(make_store(store_kind, root), memory=MemoryConfig(
            store=make_memory_store("file", root), user="alice", agent="coder"))
        again = fresh.get_or_create("chat_001")
        again.handlers.model = model  # same script, same call counter: a resumed step must not ask again
        result = fresh.commit(again)
    stored = SessionManager(make_store(store_kind, root)).get_or_create("chat_001")
    return dump_memories(memory.memory_store), _ledger(stored.state), model.calls, result


@pytest.mark.parametrize("store_kind", ["jsonl", "sqlite"])
@pytest.mark.parametrize("node", COMMIT_NODES)
def test_a_crash_at_every_step_boundary_then_a_fresh_process_equals_a_clean_run(node: str, store_kind: str, tmp_path: Path) -> None:
    clean_memories, clean_ledger, clean_calls, clean = _committed(store_kind, tmp_path / "clean", None)
    memories, ledger, calls, result = _committed(store_kind, tmp_path / "crashed", node)
    assert clean["status"] == result["status"] == "committed" and clean_calls == 2
    assert memories == clean_memories and len(memories) == 2
    assert ledger == clean_ledger and list(ledger["done"]) == ["archive_001"] and ledger["pending"] == []
    assert calls == 2  # the summary and the extraction were each asked for once, across both processes


class Recording(FakeListChatModel):
    """A fake chat model that keeps every prompt it was sent (and can fail on one call)."""

    prompts: list[str] = Field(default_factory=list)
    fail_on: int | None = None

    def _call(self, messages: Any, *args: Any, **kwargs: Any) -> str:
        self.prompts = [*self.prompts, messages[-1].content]
        if self.fail_on is not None and len(self.prompts) == self.fail_on:
            raise RuntimeError("provider timeout")
        return super()._call(messages, *args, **kwargs)


def long_session(memory: MemoryConfig, bound: int = 6000, turns: int = 30) -> tuple[Session, int, list[str]]:
    """A session whose archive needs several prompts of ``bound`` chars: (session, chunks, one overview per chunk)."""
    session = Session("s", memory=memory)
    session.set_settings("session.memory.max_input_chars", bound)
    for turn in range(turns):
        session.append_message({"role": "user", "content": f"Marker U{turn}: " + "details of the build log. " * 30})
        session.append_message({"role": "assistant", "content": f"Marker A{turn}: " + "the fix is to pin the loop. " * 30})
    chunks = len(transcript_chunks(list(session.full_chat_history), bound))
    return session, chunks, [f"# Session Summary\n**Overview**: part {i} | build | in progress" for i in range(chunks)]


def test_a_long_archive_is_summarised_and_mined_in_chunks_losing_nothing(memory: MemoryConfig) -> None:
    session, chunks, overviews = long_session(memory)
    model = Recording(responses=overviews + [extraction(PREF)] * chunks)
    session.handlers.model = model
    result = session.commit()
    assert result["status"] == "committed" and chunks >= 5 and len(model.prompts) == 2 * chunks
    assert all(len(p.split("Conversation:\n", 1)[1]) <= 6000 for p in model.prompts)
    for stage in (model.prompts[:chunks], model.prompts[chunks:]):  # summaries, then extractions: every message once
        seen = "\n".join(p.split("Conversation:\n", 1)[1] for p in stage)
        assert all(seen.count(f"Marker U{t}:") == 1 and seen.count(f"Marker A{t}:") == 1 for t in range(30))
    assert all(f"part {i - 1}" in model.prompts[i] for i in range(1, chunks))  # each chunk carries the running overview
    assert all(f"part {chunks - 1}" in p for p in model.prompts[chunks:])  # extraction reads the final overview
    assert result["memories"]["created"] == ["testing"]  # found in every chunk, written once


def test_a_failed_chunk_resumes_from_that_chunk_and_duplicates_across_chunks_are_kept_once(memory: MemoryConfig) -> None:
    session, chunks, overviews = long_session(memory)
    restated = {"category": "preferences", "key": "event-loop", "abstract": "Pins the event loop", "content": "Pins the loop."}
    extractions = [extraction(restated, {"category": "events", "abstract": f"Build {i}", "content": f"Build {i} broke."})
                   for i in range(chunks)]
    model = Recording(responses=overviews + extractions, fail_on=chunks + 3)  # the third extraction call fails
    session.handlers.model = model
    first = session.commit()
    assert first["status"] == "partial" and "extract (chunk 3 of" in first["errors"][0]
    assert len(model.prompts) == chunks + 3
    model.fail_on = None
    model.responses, model.i = extractions[2:], 0
    again = session.commit()
    assert again["status"] == "committed"
    assert len(model.prompts) == chunks + 3 + (chunks - 2)  # no summary asked again, chunks 1-2 not mined again
    assert again["memories"]["created"].count("event_loop") == 1  # restated in every chunk, kept once
    assert len(active(memory.memory_store, ("user", "alice", "memories", "events"))) == chunks
