"""Correct plans (issue 22): candidates numbered as the prompt shows them, two updates of one
item in a batch never side by side, racing commits converging on one item per fact.

The model here reads each decide prompt and answers from what it shows (the candidate's
number, the refs and the stored text under them), as a careful model would; what is tested
is what our graph does with those answers.
"""

from __future__ import annotations

from collections.abc import Callable
import json
from pathlib import Path
import re
from typing import Any

from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from memory_util import MEMORY_BACKENDS, active, make_memory_store
from pydantic import Field
import pytest

from session_graph import Session
from session_graph.memory import MemoryConfig
from session_graph.memory.apply import apply_op
from session_graph.memory.plan import create_plan

SUMMARY = "# Session Summary\n**Overview**: facts | noted | done"
PROFILE = ("user", "alice", "memories", "profile")
PREFS = ("user", "alice", "memories", "preferences")
EVENTS = ("user", "alice", "memories", "events")
TOPIC = re.compile(r"\b(Lives|Works|Theme)\b")


def topic(text: str) -> str | None:
    found = TOPIC.search(text)
    return found.group(1) if found else None


class Reader(BaseChatModel):
    """Summary: fixed. Extraction: ``memories``. Decide: per candidate block, a stored line on the
    same topic with the same text -> skip; another text -> update (that line replaced); none ->
    create (or, for a profile shown, update adding the line). ``before_decide`` runs before a
    decide reply is returned (to let another writer in between a decision and its write)."""

    memories: list[dict[str, Any]]
    prompts: list[str] = Field(default_factory=list)
    before_decide: Callable[[], None] | None = None

    @property
    def _llm_type(self) -> str:
        return "reader"

    def _generate(self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kwargs: Any) -> ChatResult:
        system, body = str(messages[0].content), str(messages[-1].content)
        if "archive record" in system:
            reply = SUMMARY
        elif "worth remembering" in system:
            reply = json.dumps({"memories": self.memories})
        else:
            self.prompts.append(body)
            reply = json.dumps({"decisions": [self._decide(b) for b in re.split(r"\n\n(?=Candidate )", body)]})
            if self.before_decide is not None:
                hook, self.before_decide = self.before_decide, None
                hook()
        return ChatResult(generations=[ChatGeneration(message=AIMessage(content=reply))])

    @staticmethod
    def _decide(block: str) -> dict[str, Any]:
        number = int(re.match(r"Candidate (\d+) ", block).group(1))  # type: ignore[union-attr]
        candidate = json.loads(block.splitlines()[1])
        mine = topic(candidate["content"])
        for ref, shown in re.findall(r"^  (m\d+): (\{.*\})$", block, re.M):
            key, lines = json.loads(shown)["key"], json.loads(shown)["content"].splitlines()
            same = [line for line in lines if topic(line) == mine]
            if same and same[0].lstrip("- ") == candidate["content"]:
                return {"candidate": number, "op": "skip", "targets": [ref]}
            if same or key == "profile":
                prefix = "- " if key == "profile" else ""
                new = [prefix + candidate["content"] if topic(line) == mine else line for line in lines]
                if not same:
                    new.append(prefix + candidate["content"])
                return {"candidate": number, "op": "update", "targets": [ref], "content": "\n".join(new)}
        return {"candidate": number, "op": "create"}


@pytest.fixture(params=MEMORY_BACKENDS)
def memory(request: pytest.FixtureRequest, tmp_path: Path) -> MemoryConfig:
    return MemoryConfig(store=make_memory_store(request.param, tmp_path), user="alice", agent="coder")


def pref(content: str) -> dict[str, Any]:
    return {"category": "preferences", "key": "editor theme", "abstract": content, "content": content}


def profile(content: str) -> dict[str, Any]:
    return {"category": "profile", "key": topic(content), "abstract": content, "content": content}


def commit(memory: MemoryConfig, name: str, *memories: dict[str, Any], **kw: Any) -> tuple[dict[str, Any], Reader]:
    model = Reader(memories=list(memories), **kw)
    session = Session(name, model=model, memory=memory)
    session.append_message({"role": "user", "content": "facts"})
    session.append_message({"role": "assistant", "content": "noted"})
    return session.commit(), model


def test_a_candidate_is_decided_by_the_number_the_prompt_shows(memory: MemoryConfig) -> None:
    commit(memory, "a", pref("Theme: dark in the editor."))
    event = {"category": "events", "abstract": "Dentist on 2026-03-04", "content": "Dentist appointment on 2026-03-04."}
    result, model = commit(memory, "b", event, pref("Theme: light in the editor."))  # the first candidate has no hits
    assert "Candidate 1 (preferences" in model.prompts[0] and "Candidate 0" not in model.prompts[0]
    assert result["status"] == "committed", result["errors"]
    items = active(memory.memory_store, PREFS)
    assert [v["content"] for v in items.values()] == ["Theme: light in the editor."]


def test_two_updates_of_the_profile_in_one_batch_are_never_side_by_side(memory: MemoryConfig) -> None:
    commit(memory, "a", profile("Lives in Munich."), profile("Works at Acme."))
    result, model = commit(memory, "b", profile("Lives in Berlin."), profile("Works at Globex."))
    assert result["status"] == "committed", result["errors"]
    stored = memory.memory_store.get(PROFILE, "profile").value
    assert stored["content"].splitlines() == ["- Lives in Berlin.", "- Works at Globex."]
    assert len(model.prompts) == 1 and stored["version"] == 3  # folded: one decision, one write (v2 -> v3)


def test_two_updates_of_one_fact_in_one_batch_are_decided_again_not_folded(memory: MemoryConfig) -> None:
    commit(memory, "a", profile("Lives in Munich."))
    moved = {**profile("Lives in Oslo."), "key": "home"}  # the same fact twice in one reply, under two keys
    result, model = commit(memory, "b", profile("Lives in Berlin."), moved)
    assert result["status"] == "committed", result["errors"]
    content = memory.memory_store.get(PROFILE, "profile").value["content"]
    assert content.splitlines() == ["- Lives in Oslo."]  # the later one, decided on what the first wrote
    assert len(model.prompts) == 2


def test_an_update_decided_on_an_older_version_is_decided_again_never_concatenated(memory: MemoryConfig) -> None:
    commit(memory, "a", pref("Theme: dark in the editor."))
    rival = lambda: commit(memory, "rival", pref("Theme: solarized in the editor."))  # noqa: E731
    result, model = commit(memory, "b", pref("Theme: light in the editor."), before_decide=rival)
    assert result["status"] == "committed", result["errors"]
    (item,) = active(memory.memory_store, PREFS).values()
    assert item["content"] == "Theme: light in the editor." and item["version"] == 3  # dark -> solarized -> light
    assert "solarized" in model.prompts[1]  # the second decision was shown what the rival wrote


def test_racing_creates_of_one_fact_converge_on_one_item(memory: MemoryConfig) -> None:
    rival = lambda: commit(memory, "rival", pref("Theme: dark, in the editor, please."))  # noqa: E731
    font = {"category": "preferences", "key": "editor font", "abstract": "Font", "content": "Font: Fira Code in the editor."}
    commit(memory, "seed", font)  # so the candidate below has a (similar) hit and goes to the model
    result, model = commit(memory, "b", pref("Theme: dark in the editor."), before_decide=rival)
    assert result["status"] == "committed", result["errors"]
    assert len(model.prompts) == 2  # the CREATE found the rival's item at its key: decided again
    assert sorted(active(memory.memory_store, PREFS)) == ["editor_font", "editor_theme"]  # no editor_theme_<hash>


def test_a_compare_and_set_write_writes_nothing_when_the_item_moved(tmp_path: Path) -> None:
    store = make_memory_store("file", tmp_path)
    (op,) = create_plan([pref("Theme: dark.")], [list(PREFS)])
    apply_op(store, op, "a#0", [], "2026-01-01T00:00:00Z")
    update = {**op, "op": "update", "targets": ["editor_theme"], "seen": {"editor_theme": 1}, "content": "Theme: light."}
    moved = {**update, "content": "Theme: solarized."}
    assert apply_op(store, moved, "b#0", [], "2026-01-02T00:00:00Z") == "updated"
    assert apply_op(store, update, "c#0", [], "2026-01-03T00:00:00Z") == "conflict"
    assert store.get(PREFS, "editor_theme").value["content"] == "Theme: solarized."


def test_remember_without_a_model_rewrites_the_fact_it_restates(memory: MemoryConfig) -> None:
    from session_graph.memory.recall import remember

    said = ["User prefers dark mode in the editor.", "The user likes a dark editor theme.",
            "User now prefers light mode in the editor."]
    assert [remember(memory, text) for text in said] == ["created", "updated", "updated"]
    (item,) = active(memory.memory_store, PREFS).values()
    assert item["content"] == said[-1] and item["version"] == 3  # the older texts are in its history
    assert remember(memory, said[-1]) == "skipped"
    assert remember(memory, "User prefers tabs over spaces.") == "created"  # another fact stays another memory


def test_remember_with_a_model_goes_through_the_decide_step(memory: MemoryConfig) -> None:
    from session_graph.memory.recall import remember

    model = Reader(memories=[])
    assert remember(memory, "Theme: dark in the editor.", key="look", model=model) == "created"
    assert remember(memory, "Theme: light, in the editor.", key="colours", model=model) == "updated"  # another key
    assert "Candidate 0 (preferences" in model.prompts[0] and "Theme: dark" in model.prompts[0]
    (item,) = active(memory.memory_store, PREFS).values()
    assert item["content"] == "Theme: light, in the editor."


def test_the_extraction_prompt_lists_the_keys_already_stored(memory: MemoryConfig) -> None:
    commit(memory, "a", pref("Theme: dark in the editor."))
    seen: list[str] = []
    model = Reader(memories=[])
    original = model._generate

    def spy(messages: list[BaseMessage], *args: Any, **kwargs: Any) -> ChatResult:
        seen.append("\n".join(str(m.content) for m in messages))
        return original(messages, *args, **kwargs)

    object.__setattr__(model, "_generate", spy)
    session = Session("b", model=model, memory=memory)
    session.append_message({"role": "user", "content": "more"})
    session.commit()
    extract_body = next(text for text in seen if "worth remembering" in text).split("User id:", 1)[1]
    assert '"preferences/editor_theme": "Theme: dark in the editor."' in extract_body and "(none yet)" not in extract_body


def test_tenants_never_share_memory(tmp_path: Path) -> None:
    from session_graph import SessionManager

    model = Reader(memories=[pref("Theme: dark in the editor.")])
    memory = MemoryConfig(store=make_memory_store("inmemory", tmp_path), user="alice", agent="coder", model=model)
    alice = SessionManager(tmp_path / "sessions", memory=memory)
    bob = alice.for_tenant("bob")
    assert bob.memory is not None and (bob.memory.tenant, bob.memory.store) == ("bob", memory.store)
    session = bob.get_or_create("s1")
    session.append_message({"role": "user", "content": "facts"})
    assert bob.commit(session)["status"] == "committed"
    assert active(memory.memory_store, ("user", "bob~alice", "memories", "preferences"))  # tenant bob's own namespace
    assert not active(memory.memory_store, PREFS)  # nothing written into alice's memories


def test_the_user_and_agent_come_from_the_run(memory: MemoryConfig) -> None:
    from langchain_core.runnables import RunnableLambda

    from session_graph.memory.recall import recall, remember

    assert memory.for_run({"configurable": {"user_id": "carol"}}).user == "carol"
    assert memory.for_run(None, {"user_id": "dave", "agent_id": "helper"}).namespace("cases") == ("agent", "helper", "memories", "cases")
    assert memory.for_run().user == "alice"  # outside a run: the config's own
    store_in_run = RunnableLambda(lambda text: remember(memory.for_run(), text))
    store_in_run.invoke("Theme: dark in the editor.", config={"configurable": {"user_id": "erin"}})
    assert recall(memory.for_user("erin"), "editor theme") and not recall(memory, "editor theme")


def test_remember_with_a_key_never_folds_another_key_s_fact(memory: MemoryConfig) -> None:
    from session_graph.memory.recall import remember

    for n in (5, 77, 301):
        remember(memory, f"The user maintains the postgres replica number {n} for the billing team.", "entities",
                 key=f"postgres replica {n}")
    assert len(active(memory.memory_store, ("user", "alice", "memories", "entities"))) == 3


def test_a_pending_plan_is_never_applied_to_a_namespace_it_was_not_derived_for(memory: MemoryConfig) -> None:
    from session_graph.commit.nodes.write import write as real_write

    def die(state: Any, runtime: Any) -> Any:
        raise KeyboardInterrupt

    model = Reader(memories=[pref("Theme: dark in the editor.")])
    session = Session("s", model=model, memory=memory).override_commit_node("write", die)
    session.append_message({"role": "user", "content": "facts"})
    with pytest.raises(KeyboardInterrupt):
        session.commit()
    (journal,) = session.state.archives["pending"].values()
    journal["plan"][0]["namespace"] = ["user", "mallory", "memories", "preferences"]  # a tampered or foreign journal
    session.override_commit_node("write", real_write)
    result = session.commit()
    # the tampered plan is dropped when the commit resumes (commit/trust.py) and decided again for
    # this session's own user; the write step would refuse a foreign namespace as well
    assert result["status"] == "committed", result["errors"]
    assert not active(memory.memory_store, ("user", "mallory", "memories", "preferences"))
    assert active(memory.memory_store, PREFS)


def test_three_way_merge_keeps_both_changes_or_refuses_a_clash() -> None:
    from session_graph.memory.fold import merge3

    base = "- Lives in Munich.\n- Works at Acme."
    assert merge3(base, "- Lives in Berlin.\n- Works at Acme.", "- Lives in Munich.\n- Works at Globex.") == \
        "- Lives in Berlin.\n- Works at Globex."
    assert merge3(base, "- Lives in Berlin.\n- Works at Acme.", "- Lives in Oslo.\n- Works at Acme.") is None
    assert merge3(base, base + "\n- Likes tea.", base + "\n- Has a cat.") == base + "\n- Likes tea.\n- Has a cat."
    assert merge3(base, base + "\n- Likes tea.", base + "\n- Likes tea.") == base + "\n- Likes tea."


def test_the_async_remember_decides_through_ainvoke(memory: MemoryConfig) -> None:
    import asyncio

    from session_graph.memory.recall import aremember

    model = Reader(memories=[])
    assert asyncio.run(aremember(memory, "Theme: dark in the editor.", key="look", model=model)) == "created"
    assert asyncio.run(aremember(memory, "Theme: light, in the editor.", key="colours", model=model)) == "updated"
    assert len(model.prompts) == 1 and [v["content"] for v in active(memory.memory_store, PREFS).values()] == [
        "Theme: light, in the editor."]
