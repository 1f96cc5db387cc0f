"""Stage 1 of long-term memory: keys, the file store, BM25, the prefilter, plans and the apply step."""

from __future__ import annotations

from pathlib import Path

from langchain_core.messages import AIMessage
from memory_util import MEMORY_BACKENDS, active, dump_memories, make_memory_store
import pytest

from session_graph import ConfigurationError, MemoryReplyError
from session_graph.memory import FileMemoryStore, MemoryConfig, content_hash, slug
from session_graph.memory.apply import apply_op
from session_graph.memory.bm25 import Bm25, terms
from session_graph.memory.categories import item_key, memory_namespace, parse_uri
from session_graph.memory.plan import create_plan, plan_from_decisions
from session_graph.memory.prefilter import prefilter
from session_graph.memory.replies import Decision, parse_decisions, parse_extraction, parse_summary

PREFS = ("user", "alice", "memories", "preferences")
EVENTS = ("user", "alice", "memories", "events")
SRC = [{"session": "s1", "archive": "archive_001", "message_ids": ["m1"]}]
NOW = "2026-01-01T00:00:00Z"


@pytest.fixture(params=MEMORY_BACKENDS)
def store(request: pytest.FixtureRequest, tmp_path: Path):  # type: ignore[no-untyped-def]
    return make_memory_store(request.param, tmp_path)


def candidate(category: str, content: str, key: str | None = None, abstract: str | None = None) -> dict:
    return {"category": category, "key": key, "abstract": abstract or content[:40], "overview": "", "content": content}


def test_keys_are_deterministic_and_uris_parse() -> None:
    assert slug("Editor theme!") == "editor_theme" and slug("编辑器 主题") == "编辑器_主题"
    assert item_key("events", None, "Trip to Oslo  12-16 May") == "ev_" + content_hash("trip to oslo 12-16 may")
    assert item_key("cases", None, "x").startswith("case_") and item_key("profile", "whatever", "x") == "profile"
    assert memory_namespace("cases", "alice", "coder") == ("agent", "coder", "memories", "cases")
    assert parse_uri("memory://user/alice/preferences/tests") == (PREFS, "tests")
    assert parse_uri("viking://user/x") is None and parse_uri("memory://user/alice/nope/x") is None


def test_config_refuses_what_cannot_name_a_namespace(tmp_path: Path) -> None:
    for bad in ("", 3):  # any other text is encoded into a label (tests/test_memory_ids.py)
        with pytest.raises(ConfigurationError, match="user"):
            MemoryConfig(user=bad)  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError, match="BaseStore"):
        MemoryConfig(store={})  # type: ignore[arg-type]
    config = MemoryConfig(path=tmp_path / "m")
    assert isinstance(config.memory_store, FileMemoryStore) and config.memory_store is config.memory_store


def test_file_store_layout_is_openvikings(tmp_path: Path) -> None:
    store = FileMemoryStore(tmp_path, fsync=False)
    store.put(("user", "alice", "memories", "profile"), "profile", {"content": "- engineer", "status": "active"})
    store.put(PREFS, "editor_theme", {"content": "Prefers a dark theme", "status": "active", "abstract": "theme"})
    store.put(("agent", "coder", "memories", "cases"), "case_1", {"content": "fixed CI", "status": "active"})
    files = sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*.md"))
    assert files == ["agent/coder/memories/cases/case_1.md", "user/alice/memories/preferences/editor_theme.md",
                     "user/alice/memories/profile.md"]
    text = (tmp_path / "user/alice/memories/preferences/editor_theme.md").read_text()
    assert text.startswith("---\n") and text.endswith("---\nPrefers a dark theme")
    again = FileMemoryStore(tmp_path)  # a fresh process reads the same items
    assert again.get(PREFS, "editor_theme").value == {"content": "Prefers a dark theme", "status": "active", "abstract": "theme"}
    assert [i.key for i in again.search(("user", "alice"), query="dark theme")] == ["editor_theme"]
    assert len(again.search(("user",), filter={"status": "active"})) == 2
    assert again.list_namespaces(prefix=("user",)) == [("user", "alice", "memories", "preferences"), ("user", "alice", "memories", "profile")]
    again.put(PREFS, "editor_theme", None)
    assert again.get(PREFS, "editor_theme") is None


def test_bm25_reads_cjk_and_word_pieces() -> None:
    assert "编辑" in terms("我喜欢编辑器") and terms("deployment") == terms("deploys")  # one stem
    index = Bm25()
    index.add("zh", "用户喜欢深色主题的编辑器")
    index.add("en", "prefers window seats on flights")
    index.add("other", "likes tea in the morning")
    assert index.search("编辑器主题", 1)[0][0] == "zh"
    assert index.search("deploying flight seats", 1)[0][0] == "en"


def test_prefilter_finds_key_hash_similar_and_batch_hits(store) -> None:  # type: ignore[no-untyped-def]
    store.put(PREFS, "editor_theme", {"status": "active", "abstract": "editor theme", "content": "Prefers dark themes in the editor",
                                       "hash": content_hash("Prefers dark themes in the editor"), "version": 1})
    store.put(PREFS, "food", {"status": "active", "abstract": "food", "content": "Vegetarian", "hash": content_hash("Vegetarian"), "version": 1})
    store.put(PREFS, "old", {"status": "superseded", "abstract": "editor", "content": "Prefers dark themes in the editor", "version": 1})
    cands = [candidate("preferences", "Wants a dark editor theme", key="editor theme"),
             candidate("preferences", "vegetarian", key="diet"),
             candidate("preferences", "Uses a dark theme in vim", key="editor theme")]
    hits = prefilter(store, cands, [PREFS] * 3, top_k=2)
    assert hits[0]["m1"]["key"] == "editor_theme" and hits[0]["m1"]["kind"] == "key"
    assert hits[1]["m1"]["key"] == "food" and hits[1]["m1"]["kind"] == "hash"
    assert "c0" in hits[2] and all(h["key"] != "old" for hs in hits for h in hs.values())  # superseded never shown


def test_bad_replies_are_errors_naming_the_step() -> None:
    for bad in ("I found nothing worth keeping.", '{"memories": [{"category": "profile"', "", '{"memories": 3}',
                "<think>hmm</think>", '{"memories": [{"category": "hobbies", "abstract": "a", "content": "b"}]}'):
        with pytest.raises(MemoryReplyError) as caught:
            parse_extraction(AIMessage(content=bad))
        assert caught.value.step == "extract"
    fenced = '<think>x</think>```json\n{"memories": [{"category": "events", "abstract": "a", "content": "b"}]}\n```'
    assert parse_extraction(AIMessage(content=fenced))[0].category == "events"
    assert parse_extraction(AIMessage(content='{"memories": []}')) == []
    with pytest.raises(MemoryReplyError, match="decide"):
        parse_decisions(AIMessage(content='{"decisions": [{"candidate": 0, "op": "replace"}]}'))
    assert parse_summary(AIMessage(content="# Session Summary\n**Overview**: CI: fix | done | Completed\n## Analysis"))[1] == (
        "CI: fix | done | Completed")


def test_decisions_naming_unseen_ids_or_forbidden_ops_are_rejected() -> None:
    cands = [candidate("events", "Trip to Oslo in May"), candidate("preferences", "dark theme", key="theme")]
    hits = [{"m1": {"key": "ev_1", "version": 1}}, {"m1": {"key": "theme", "version": 2}}]
    namespaces = [list(EVENTS), list(PREFS)]
    for decisions, culprit in (
        ([Decision(candidate=0, op="update", targets=["m1"], content="x"), Decision(candidate=1, op="skip", targets=["m1"])], "not allowed for events"),
        ([Decision(candidate=0, op="skip", targets=["m1"]), Decision(candidate=1, op="update", targets=["m7"], content="x")], "were not shown"),
        ([Decision(candidate=0, op="skip", targets=["m1"])], "no decision for candidates [1]"),
        ([Decision(candidate=0, op="skip", targets=["m1"]), Decision(candidate=1, op="merge", targets=["m1"], content="x")], "two or more"),
        ([Decision(candidate=0, op="skip", targets=["m1"]), Decision(candidate=1, op="update", targets=["m1"])], "needs the merged"),
    ):
        with pytest.raises(MemoryReplyError, match=culprit.replace("[", r"\[").replace("]", r"\]")):
            plan_from_decisions(cands, namespaces, hits, decisions)
    plan = plan_from_decisions(cands, namespaces, hits, [Decision(candidate=0, op="skip", targets=["m1"]),
                                                         Decision(candidate=1, op="update", targets=["m1"], content="dark, always")])
    assert [(p["op"], p["key"], p["seen"]) for p in plan] == [("skip", "ev_1", {"ev_1": 1}), ("update", "theme", {"theme": 2})]


def test_every_decision_kind_applies_once_and_replays_to_nothing(store) -> None:  # type: ignore[no-untyped-def]
    def run(plan: list[dict], archive: str) -> list[str]:
        return [apply_op(store, op, f"{archive}#{op['index']}", SRC, NOW) for op in plan]

    first = create_plan([candidate("preferences", "Dark theme", key="theme"), candidate("preferences", "Light theme at night", key="night"),
                         candidate("events", "Trip to Oslo 12-16 May")], [list(PREFS), list(PREFS), list(EVENTS)])
    assert run(first, "archive_001") == ["created", "created", "created"]
    assert run(first, "archive_001") == ["replayed"] * 3  # the same archive again: nothing changes
    snapshot = dump_memories(store)
    assert run(first, "archive_001") == ["replayed"] * 3 and dump_memories(store) == snapshot

    ops = [
        {"index": 0, "op": "update", "category": "preferences", "namespace": list(PREFS), "key": "theme", "targets": ["theme"],
         "seen": {"theme": 1}, "abstract": "theme", "overview": "", "content": "Dark theme, always"},
        {"index": 1, "op": "skip", "category": "events", "namespace": list(EVENTS), "key": first[2]["key"],
         "targets": [first[2]["key"]], "seen": {}, "abstract": "", "overview": "", "content": "Trip to Oslo 12-16 May"},
    ]
    assert [apply_op(store, op, f"archive_002#{op['index']}", [{"session": "s2", "archive": "archive_002"}], NOW) for op in ops] == [
        "updated", "skipped"]
    theme = store.get(PREFS, "theme").value
    assert (theme["version"], theme["content"]) == (2, "Dark theme, always")
    assert store.get(("user", "alice", "memories_history", "preferences"), "theme@v1").value["content"] == "Dark theme"
    event = store.get(EVENTS, first[2]["key"]).value
    assert event["content"] == "Trip to Oslo 12-16 May" and len(event["sources"]) == 2  # events never rewritten

    merge = {"index": 0, "op": "merge", "category": "preferences", "namespace": list(PREFS), "key": "theme",
             "targets": ["theme", "night"], "seen": {}, "abstract": "themes", "overview": "", "content": "Dark by day, light at night"}
    assert apply_op(store, merge, "archive_003#0", SRC, NOW) == "merged"
    assert apply_op(store, merge, "archive_003#0", SRC, NOW) == "merged"  # replay: nothing more
    assert sorted(active(store, PREFS)) == ["night"]  # survivor: most used, then oldest, then first key
    theme = store.get(PREFS, "theme").value
    assert (theme["status"], theme["superseded_by"]) == ("superseded", "night")
    survivor = store.get(PREFS, "night").value
    assert (survivor["supersedes"], survivor["content"], survivor["version"]) == (["theme"], "Dark by day, light at night", 2)
    assert [i.key for i in store.search(PREFS, filter={"status": "active"})] == ["night"]  # merged away: out of search


def test_create_on_an_occupied_key_never_duplicates(store) -> None:  # type: ignore[no-untyped-def]
    plan = create_plan([candidate("preferences", "Dark theme", key="theme")], [list(PREFS)])
    apply_op(store, plan[0], "a1#0", SRC, NOW)
    assert apply_op(store, plan[0], "a2#0", SRC, NOW) == "skipped"  # same content, another archive
    other = create_plan([candidate("preferences", "Theme park fan", key="theme")], [list(PREFS)])
    assert apply_op(store, other[0], "a3#0", SRC, NOW) == "conflict"  # the decision never saw "theme": decide again
    assert sorted(active(store, PREFS)) == ["theme"]  # nothing written
    other[0]["seen"] = {"theme": 1}  # shown "theme" and still decided CREATE: another topic under the same slug
    assert apply_op(store, other[0], "a3#0", SRC, NOW) == "created"
    keys = sorted(active(store, PREFS))
    assert keys[0] == "theme" and keys[1].startswith("theme_") and len(keys) == 2
    hashes = [v["hash"] for v in active(store, PREFS).values()]
    assert len(hashes) == len(set(hashes))


def test_profile_stays_bounded_after_sixty_commits(tmp_path: Path) -> None:
    store = FileMemoryStore(tmp_path, fsync=False)
    ns = ["user", "alice", "memories", "profile"]
    for n in range(60):
        op = create_plan([candidate("profile", f"Works on project number {n} this week")], [ns])[0]
        shown = store.get(tuple(ns), "profile")
        op["seen"] = {"profile": shown.value["version"]} if shown else {}  # as a decision that was shown the profile
        apply_op(store, op, f"archive_{n:03d}#0", SRC, NOW, profile=(30, 2000))
    profile = store.get(tuple(ns), "profile").value
    lines = profile["content"].splitlines()
    assert len(lines) <= 30 and len(profile["content"]) <= 2000 and lines[-1].endswith("number 59 this week")
    history = store.search(("user", "alice", "memories_history", "profile"), limit=1000)
    kept = {line for item in history for line in item.value["content"].splitlines()}
    assert all(f"- Works on project number {n} this week" in kept | set(lines) for n in range(60))  # nothing lost
