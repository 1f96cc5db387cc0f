"""Bounded commits (issue 22): a huge paste is read by head, tail and digest; a per-commit
budget of calls and tokens makes the commit partial and resumable; a runaway reply is capped;
the result reports the tokens spent."""

from __future__ import annotations

import json
from typing import Any

from langchain_core.language_models.fake_chat_models import FakeListChatModel
from langgraph.store.memory import InMemoryStore
from memory_util import active
from pydantic import Field

from session_graph import Session
from session_graph.memory import MemoryConfig

SUMMARY = "# Session Summary\n**Overview**: logs | read | done"
NONE = json.dumps({"memories": []})


class Recording(FakeListChatModel):
    prompts: list[str] = Field(default_factory=list)

    def _call(self, messages: Any, *args: Any, **kwargs: Any) -> str:
        self.prompts = [*self.prompts, str(messages[-1].content)]
        return super()._call(messages, *args, **kwargs)


def test_a_50_mb_paste_costs_two_calls_not_thousands() -> None:
    memory = MemoryConfig(store=InMemoryStore(), user="alice", agent="coder")
    model = Recording(responses=[SUMMARY, NONE])
    session = Session("s", model=model, memory=memory)
    log = "".join(f"line {i}: GET /api/items 200 12ms\n" for i in range(1_700_000))  # ~52 MB
    session.append_message({"role": "user", "content": "START OF PASTE " + log + " END OF PASTE. Why is it slow?"})
    result = session.commit()
    assert result["status"] == "committed" and len(model.prompts) == 2
    assert all(len(p) < 60_000 for p in model.prompts)
    assert "START OF PASTE" in model.prompts[0] and "Why is it slow?" in model.prompts[0] and "sha256" in model.prompts[0]
    assert result["tokens"]["calls"] == 2 and 0 < result["tokens"]["input"] < 30_000


def test_past_the_budget_a_commit_is_partial_and_the_next_goes_on() -> None:
    memory = MemoryConfig(store=InMemoryStore(), user="alice", agent="coder", max_commit_calls=3)
    session = Session("s", memory=memory)
    session.set_settings("session.memory.max_input_chars", 2000)
    for turn in range(12):
        session.append_message({"role": "user", "content": f"Turn {turn}: " + "some details of the build. " * 20})
    chunks = 4
    model = Recording(responses=[SUMMARY] * 20)
    session.handlers.model = model
    first = session.commit()
    assert first["status"] == "partial" and "budget is spent (3 model calls of 3" in first["errors"][0]
    assert len(model.prompts) == 3 and first["tokens"]["calls"] == 3
    model.responses, model.i = [SUMMARY] * chunks + [NONE] * 20, 0
    done = []
    for _ in range(6):  # each commit spends at most 3 calls and goes on where the last stopped
        result = session.commit()
        done.append(result["status"])
        if result["status"] == "committed":
            break
    assert done[-1] == "committed" and all(len(p) < 4000 for p in model.prompts)


def test_a_runaway_extraction_reply_is_capped() -> None:
    memory = MemoryConfig(store=InMemoryStore(), user="alice", agent="coder")
    many = json.dumps({"memories": [{"category": "events", "abstract": f"e{i}", "content": f"Event {i} happened."}
                                    for i in range(10_000)]})
    session = Session("s", model=FakeListChatModel(responses=[SUMMARY, many]), memory=memory)
    session.append_message({"role": "user", "content": "lots happened"})
    result = session.commit()
    assert result["status"] == "committed" and result["memories_extracted"] == 50
    assert "10000 memories" in result["warnings"][0]
    assert len(active(memory.memory_store, ("user", "alice", "memories", "events"))) == 50
