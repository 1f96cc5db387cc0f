"""Retrieval terms (issue 22): the extraction model names a few other words per candidate (other
names, synonyms, the broader term, translations); they are kept with the memory it writes and
fused as one more lexical list on both sides of the prefilter, so a restatement that shares no
word with the stored fact (a Lenovo notebook / a ThinkPad laptop) is still shown beside it.
Whatever a real model does with the field (leaves it out, a string, numbers, null, a mapping)
never fails a commit."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from langchain_core.language_models.fake_chat_models import FakeListChatModel
from langgraph.store.memory import InMemoryStore
from memory_util import active
import pytest

from session_graph import Session
from session_graph.integrations.memory_tools import memory_tools
from session_graph.memory import MemoryConfig
from session_graph.memory.apply import apply_op
from session_graph.memory.items import MAX_TERMS, clean_terms
from session_graph.memory.plan import create_plan
from session_graph.memory.prefilter import prefilter
from session_graph.memory.prompts import extract_prompt
from session_graph.memory.recall import recall, remember
from session_graph.memory.replies import Extraction, parse_extraction

PREFS = ("user", "alice", "memories", "preferences")
SUMMARY = "# Session Summary\n**Overview**: laptops | x | done"
FILLERS = ["The user keeps the billing service on call rotation.", "The user reviewed the search migration plan.",
           "The user asked about storage pricing tiers.", "The user's editor theme is dark.",
           "The user lives in Munich.", "The user runs tests with pytest."]
LAPTOP = "The user's laptop is a ThinkPad X1."
PROBE = "Works on a Lenovo notebook."  # no word in common with LAPTOP


def put(store: Any, text: str, key: str, terms: Any = None) -> None:
    (op,) = create_plan([{"category": "preferences", "key": key, "abstract": text, "content": text, "terms": terms}],
                        [list(PREFS)])
    apply_op(store, op, f"seed/{key}", [], "2026-01-01T00:00:00Z")


def seeded(laptop_terms: Any = None) -> InMemoryStore:
    store = InMemoryStore()
    for number, text in enumerate(FILLERS):
        put(store, text, f"filler {number}")
    put(store, LAPTOP, "laptop", laptop_terms)
    return store


def hit_keys(store: Any, terms: Any = None) -> list[str]:
    candidate = {"category": "preferences", "key": None, "abstract": PROBE, "content": PROBE, "terms": terms}
    (hits,) = prefilter(store, [candidate], [PREFS], top_k=5)
    return [hit["key"] for hit in hits.values()]


@pytest.mark.parametrize(("raw", "expected"), [
    (None, []), (True, []), (3.5, ["3.5"]), ("laptop, ThinkPad;computer\nLenovo", ["laptop", "ThinkPad", "computer", "Lenovo"]),
    (["laptop", "Laptop", " ", None, 7, ["notebook", {"x": "computer"}]], ["laptop", "7", "notebook", "computer"]),
    ({"synonyms": ["laptop"], "translations": "笔记本电脑、电脑"}, ["laptop", "笔记本电脑", "电脑"]),
    ([" - \"dark mode\" "], ["dark mode"]),
])
def test_terms_are_cleaned_from_whatever_a_model_gives(raw: Any, expected: list[str]) -> None:
    assert clean_terms(raw) == expected


def test_terms_are_bounded_in_number_and_length() -> None:
    cleaned = clean_terms([f"term{n}" for n in range(100)] + ["x" * 500])
    assert len(cleaned) == MAX_TERMS and cleaned[0] == "term0"
    assert len(clean_terms("y" * 500)[0]) == 60


@pytest.mark.parametrize("terms", [None, "laptop, ThinkPad", 42, {"a": ["b"]}, [1, None, "ok"], "", []])
def test_an_extraction_reply_with_odd_terms_or_none_is_read(terms: Any) -> None:
    memory = {"category": "preferences", "key": "laptop", "abstract": "Lenovo notebook", "content": PROBE}
    with_terms = {**memory, "terms": terms}
    (read,) = parse_extraction(json.dumps({"memories": [with_terms]}))
    assert read.terms == clean_terms(terms) and read.content == PROBE
    (without,) = parse_extraction(json.dumps({"memories": [memory]}))  # the field left out (the recorded real reply's objects)
    assert without.terms == []


def test_the_prompt_and_the_schema_ask_for_terms() -> None:
    system = str(extract_prompt("user: hi", "", [], "alice")[0].content)
    assert '"terms": ["...", "..."]' in system and "synonyms" in system
    assert "terms" in Extraction.model_json_schema()["$defs"]["Candidate"]["properties"]


def test_without_terms_the_lenovo_notebook_is_a_miss_and_terms_on_either_side_find_it() -> None:
    assert "laptop" not in hit_keys(seeded())  # the cause: no shared word, no embedding
    assert "laptop" in hit_keys(seeded(), terms=["laptop", "ThinkPad", "computer"])  # the query expanded
    assert "laptop" in hit_keys(seeded(laptop_terms=["Lenovo", "notebook", "computer"]))  # the stored item expanded
    assert "laptop" in hit_keys(seeded(laptop_terms="Lenovo, notebook"), terms=["laptop"])


def test_terms_are_kept_with_the_item_and_unioned_on_update_and_skip() -> None:
    store = InMemoryStore()
    put(store, LAPTOP, "laptop", ["Lenovo", "notebook"])
    assert store.get(PREFS, "laptop").value["terms"] == ["Lenovo", "notebook"]
    (op,) = create_plan([{"category": "preferences", "key": "laptop", "abstract": "MacBook", "content": "Now a MacBook.",
                          "terms": ["Apple", "notebook", {"odd": 3}]}], [list(PREFS)])
    op.update(op="update", targets=["laptop"], seen={"laptop": 1})
    assert apply_op(store, op, "a#1", [], "2026-01-02T00:00:00Z") == "updated"
    assert store.get(PREFS, "laptop").value["terms"] == ["Apple", "notebook", "3", "Lenovo"]  # the newest first
    skip = {**op, "op": "skip", "terms": "MacBook Air", "seen": {"laptop": 2}}
    assert apply_op(store, skip, "a#2", [], "2026-01-03T00:00:00Z") == "skipped"
    assert store.get(PREFS, "laptop").value["terms"][0] == "MacBook Air"
    odd = {**op, "op": "skip", "terms": object(), "seen": {"laptop": 2}}  # a journaled op with nonsense: no failure
    assert apply_op(store, odd, "a#3", [], "2026-01-04T00:00:00Z") == "skipped"


def test_a_commit_keeps_the_model_s_terms_and_the_next_commit_shows_the_stored_fact() -> None:
    memory = MemoryConfig(store=InMemoryStore(), user="alice", agent="coder")
    for number, text in enumerate(FILLERS):
        remember(memory, text, "preferences", key=f"filler {number}")
    first = {"category": "preferences", "key": "laptop", "abstract": "ThinkPad X1 laptop", "content": LAPTOP,
             "terms": ["Lenovo", "notebook", "computer"]}
    session = Session("a", model=FakeListChatModel(responses=[SUMMARY, json.dumps({"memories": [first]})]), memory=memory)
    session.append_message({"role": "user", "content": "My laptop is a ThinkPad X1."})
    assert session.commit()["status"] == "committed"
    assert active(memory.memory_store, PREFS)["laptop"]["terms"] == ["Lenovo", "notebook", "computer"]
    restated = {"category": "preferences", "key": "work machine", "abstract": "Lenovo notebook", "content": PROBE,
                "terms": "laptop, ThinkPad"}  # another key, no shared word, terms as one string
    decide = json.dumps({"decisions": [{"candidate": 0, "op": "skip", "targets": ["m1"]}]})
    model = FakeListChatModel(responses=[SUMMARY, json.dumps({"memories": [restated]}), decide])
    second = Session("b", model=model, memory=memory)
    second.append_message({"role": "user", "content": "I work on a Lenovo notebook."})
    result = second.commit()
    assert result["status"] == "committed" and result["memories"]["skipped"] == 1  # m1 was the laptop: no duplicate
    stored = active(memory.memory_store, PREFS)
    assert "work_machine" not in stored and stored["laptop"]["terms"][:2] == ["laptop", "ThinkPad"]
    assert [source.get("session") for source in stored["laptop"]["sources"]] == ["a", "b"]


def test_remember_keeps_the_caller_s_terms_and_recall_finds_the_fact_by_them() -> None:
    memory = MemoryConfig(store=InMemoryStore(), user="alice", agent="coder")
    for number, text in enumerate(FILLERS):
        remember(memory, text, "preferences", key=f"filler {number}")
    assert remember(memory, LAPTOP, "preferences", key="laptop", terms="Lenovo, notebook") == "created"
    assert recall(memory, "Lenovo notebook", k=3)[0]["key"] == "laptop"
    skip = FakeListChatModel(responses=[json.dumps({"decisions": [{"candidate": 0, "op": "skip", "targets": ["m1"]}]})])
    assert remember(memory, PROBE, "preferences", model=skip) == "skipped"  # no terms given: the stored ones made it a hit
    assert len(active(memory.memory_store, PREFS)) == len(FILLERS) + 1


def test_the_remember_tool_takes_terms_as_a_list_or_a_string_and_needs_none() -> None:
    memory = MemoryConfig(store=InMemoryStore(), user="alice", agent="coder")
    tool = {t.name: t for t in memory_tools(memory)}["remember"]
    assert tool.invoke({"content": LAPTOP, "key": "laptop", "terms": "Lenovo, notebook"}).startswith("created")
    assert tool.invoke({"content": "The user drinks espresso.", "key": "coffee", "terms": ["coffee", 3]}).startswith("created")
    assert tool.invoke({"content": "The user lives in Munich.", "key": "home"}).startswith("created")
    stored = active(memory.memory_store, PREFS)
    assert stored["laptop"]["terms"] == ["Lenovo", "notebook"] and stored["coffee"]["terms"] == ["coffee", "3"]
    assert "terms" not in stored["home"]


def test_terms_survive_when_candidates_or_updates_are_folded_together() -> None:
    from session_graph.commit.nodes.extract import _once
    from session_graph.memory.fold import fold_updates

    first = {"category": "preferences", "key": "laptop", "abstract": "a", "content": "ThinkPad.", "terms": ["Lenovo"]}
    again = {**first, "content": "A ThinkPad X1.", "terms": ["notebook"]}
    (kept,) = _once([first, again])
    assert kept["content"] == "A ThinkPad X1." and kept["terms"] == ["notebook", "Lenovo"]
    store = InMemoryStore()
    put(store, "- Lives in Munich.\n- Has a dog.", "home")
    stored = store.get(PREFS, "home").value
    ops = []
    for index, (content, terms) in enumerate([("- Lives in Berlin.\n- Has a dog.", ["Berlin"]),
                                               ("- Lives in Munich.\n- Has two dogs.", ["pets"])]):
        (op,) = create_plan([{"category": "preferences", "key": "home", "abstract": "x", "content": content, "terms": terms}],
                            [list(PREFS)])
        ops.append({**op, "index": index, "op": "update", "targets": ["home"], "seen": {"home": 1}})
    assert fold_updates(ops, set(), {(*PREFS, "home"): stored}) == {1: 0}
    assert ops[0]["content"] == "- Lives in Berlin.\n- Has two dogs." and ops[0]["terms"] == ["pets", "Berlin"]


def test_the_terms_index_is_made_only_when_terms_appear_then_kept_current() -> None:
    from session_graph.memory.prefilter import indexes

    def _index(store: Any, namespace: tuple[str, ...]) -> Any:
        return indexes(store, [namespace])[0]

    store = seeded()
    hit_keys(store)  # no terms anywhere: the word lists alone
    assert _index(store, PREFS).expanded is None
    assert "laptop" in hit_keys(store, terms=["ThinkPad"])  # a candidate with terms: made from what is indexed
    put(store, "The user's phone is a Pixel 8.", "phone", ["smartphone", "Android"])
    index = _index(store, PREFS)
    assert index.expanded is not None and index.termed == {"phone"}
    assert index.with_terms().search("smartphone", limit=1)[0][0] == "phone"


def test_the_file_store_s_query_search_finds_an_item_by_its_terms(tmp_path: Path) -> None:
    from session_graph.memory import FileMemoryStore

    store = FileMemoryStore(tmp_path / "memory", fsync=False)
    put(store, LAPTOP, "laptop", ["Lenovo", "notebook"])
    put(store, "The user lives in Munich.", "home")
    assert [item.key for item in store.search(PREFS, query="Lenovo notebook")] == ["laptop"]


@pytest.mark.parametrize(("stored_terms", "given_terms"), [
    (["Lenovo", "notebook", "computer"], None),  # the stored fact's terms name the restatement's words
    (None, ["ThinkPad", "laptop", "computer"]),  # the restatement's terms name the stored fact's words
])
def test_remember_without_a_model_reads_terms_when_it_compares_a_restatement(stored_terms: Any, given_terms: Any) -> None:
    memory = MemoryConfig(store=InMemoryStore(), user="alice", agent="coder")  # no model: the conservative rule
    assert remember(memory, "Works on a ThinkPad laptop.", terms=stored_terms) == "created"
    assert remember(memory, "Works on a Lenovo notebook.", terms=given_terms) == "updated"  # one word in common: terms decide
    (value,) = active(memory.memory_store, PREFS).values()
    assert value["content"] == "Works on a Lenovo notebook."


def test_remember_without_a_model_keeps_facts_apart_when_their_terms_do_not_meet() -> None:
    memory = MemoryConfig(store=InMemoryStore(), user="alice", agent="coder")
    assert remember(memory, "Works on a ThinkPad laptop.", terms=["Lenovo", "notebook"]) == "created"
    assert remember(memory, "Works on the billing service.", terms=["payments", "invoices"]) == "created"
    assert len(active(memory.memory_store, PREFS)) == 2
