"""What a user does with their memories (issue 22): list, versions, forget (history kept or
purged), event TTL, export (JSON, OpenViking layout), citations."""

from __future__ import annotations

import json
from pathlib import Path
import sys
import time

from langchain_core.language_models.fake_chat_models import FakeListChatModel
from memory_util import MEMORY_BACKENDS, make_memory_store
import pytest

from session_graph import ConfigurationError, Session
from session_graph.memory import MemoryConfig, expire, export_memories, forget, list_memories, memory_history
from session_graph.memory.items import expired
from session_graph.memory.prefilter import prefilter
from session_graph.memory.recall import format_memories, recall, remember


@pytest.fixture(params=MEMORY_BACKENDS)
def memory(request: pytest.FixtureRequest, tmp_path: Path) -> MemoryConfig:
    return MemoryConfig(store=make_memory_store(request.param, tmp_path), user="alice", agent="coder")


def test_versions_are_kept_and_forget_keeps_or_purges_them(memory: MemoryConfig) -> None:
    remember(memory, "Theme: dark in the editor.", key="editor theme")
    remember(memory, "Theme: light in the editor.", key="editor theme")
    uri = "memory://user/alice/preferences/editor_theme"
    assert [v["content"] for v in memory_history(memory, uri)] == ["Theme: dark in the editor.", "Theme: light in the editor."]
    assert forget(memory, uri) is True and forget(memory, uri) is False
    assert list_memories(memory) == [] and recall(memory, "editor theme") == []
    kept = memory_history(memory, "editor_theme", "preferences")
    assert [v["content"] for v in kept] == ["Theme: dark in the editor.", "Theme: light in the editor."]
    assert kept[-1]["status"] == "forgotten"
    remember(memory, "Shell: fish.", key="shell")
    forget(memory, "shell", "preferences", purge=True)
    assert memory_history(memory, "shell", "preferences") == []
    with pytest.raises(ConfigurationError, match="another owner"):
        forget(memory, "memory://user/bob/preferences/shell")


def test_events_expire(memory: MemoryConfig) -> None:
    short = MemoryConfig(store=memory.memory_store, user="alice", agent="coder", event_ttl=3600)
    remember(short, "Dentist appointment on 2026-03-04.", "events")
    (event,) = list_memories(short, ["events"])
    assert event["expires_at"] and recall(short, "dentist appointment")
    later = "2999-01-01T00:00:00+00:00"
    assert expire(short, now="2000-01-01T00:00:00+00:00") == []
    assert expire(short, now=later) == [event["uri"]]
    assert list_memories(short, ["events"]) == [] and memory_history(short, event["uri"])[-1]["status"] == "forgotten"


def test_recall_leaves_out_an_event_past_its_expiry_before_expire_runs(memory: MemoryConfig, monkeypatch: pytest.MonkeyPatch) -> None:
    short = MemoryConfig(store=memory.memory_store, user="alice", agent="coder", event_ttl=3600)
    remember(short, "Dentist appointment on 2026-03-04.", "events")
    remember(short, "Dentist prefers morning appointments.", key="dentist time")
    assert len(recall(short, "dentist appointment")) == 2
    recall_module = sys.modules["session_graph.memory.recall"]  # the module: the package's ``recall`` is the function
    monkeypatch.setattr(recall_module, "expired", lambda value, now=None: expired(value, "2999-01-01T00:00:00+00:00"))
    assert [v["category"] for v in recall(short, "dentist appointment")] == ["preferences"]


def test_export_as_json_and_in_openviking_layout(memory: MemoryConfig, tmp_path: Path) -> None:
    remember(memory, "Theme: dark in the editor.", key="editor theme")
    remember(memory, "Fixed flaky CI by pinning the image digest.", "cases")
    values = export_memories(memory, tmp_path / "out.json")
    assert sorted(v["category"] for v in values) == ["cases", "preferences"]
    assert json.loads((tmp_path / "out.json").read_text()) == values
    root = export_memories(memory, tmp_path / "viking", format="openviking")
    assert (root / "user" / "alice" / "memories" / "preferences" / "editor_theme.md").read_text().endswith("Theme: dark in the editor.")
    assert list((root / "agent" / "coder" / "memories" / "cases").glob("case_*.md"))


def test_a_committed_memory_cites_the_messages_it_came_from(memory: MemoryConfig) -> None:
    reply = json.dumps({"memories": [{"category": "preferences", "key": "seat", "abstract": "Window seat",
                                      "content": "The user wants a window seat."}]})
    session = Session("trip", model=FakeListChatModel(responses=["# Session Summary\n**Overview**: x", reply]), memory=memory)
    session.append_message({"role": "user", "content": "I always want a window seat."})
    session.append_message({"role": "assistant", "content": "Noted."})
    said = session.full_chat_history[0]
    session.commit()
    (value,) = recall(memory, "window seat")
    assert value["sources"] == [{"session": "trip", "archive": "archive_001", "message_ids": [said.id]}]
    assert f'[from "session trip, archive_001 (messages {said.id})"]' in format_memories([value], citations=True)


def test_an_expired_event_is_not_a_similar_hit(memory: MemoryConfig) -> None:
    short = MemoryConfig(store=memory.memory_store, user="alice", agent="coder", event_ttl=0.001)
    remember(short, "Dentist appointment on 2026-03-04.", "events")
    time.sleep(0.01)  # past its expiry
    candidate = {"category": "events", "key": None, "abstract": "dentist", "content": "Dentist visit moved to 2026-03-09."}
    (hits,) = prefilter(short.memory_store, [candidate], [short.namespace("events")])
    assert hits == {}


def test_used_reads_openviking_uris_and_counts_skills(memory: MemoryConfig) -> None:
    remember(memory, "Engineer in Berlin.", "profile")
    remember(memory, "Theme: dark in the editor.", key="editor theme")
    bob = memory.for_user("bob")
    remember(bob, "Theme: light.", key="editor theme")
    session = Session("s", memory=memory)
    session.append_message({"role": "user", "content": "hi"})
    session.used(["viking://user/memories/profile.md", "viking://user/memories/preferences/editor_theme.md",
                  "viking://user/bob/memories/preferences/editor_theme.md"],
                 skill={"uri": "viking://agent/skills/code-search", "input": {"q": "x"}, "output": "3 files", "success": True})
    session.used(skill={"uri": "viking://agent/skills/code-search", "success": False})
    result = session.commit()
    assert result["active_count_updated"] == 2 and result["skills_used"] == 2
    counts = {v["category"]: v["active_count"] for v in list_memories(memory)}
    assert counts == {"profile": 1, "preferences": 1}
    assert list_memories(bob)[0]["active_count"] == 0  # another user's memory is never touched
    skill = memory.memory_store.get(("agent", "coder", "skills"), "viking_agent_skills_code_search").value
    assert (skill["uses"], skill["successes"], skill["failures"]) == (2, 1, 1)
    session.commit()  # nothing new: counted once
    assert memory.memory_store.get(("agent", "coder", "skills"), "viking_agent_skills_code_search").value["uses"] == 2
