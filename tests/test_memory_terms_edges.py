"""Edges of retrieval terms found in review (issue 22): the no-model remember rule and terms as a
model really writes them (generic words shared by many facts of one user)."""

from __future__ import annotations

import json
import threading
import tracemalloc

from langchain_core.messages import ToolCall
from langgraph.store.memory import InMemoryStore
import pytest

from session_graph.integrations.memory_tools import memory_tools
from session_graph.memory import MemoryConfig, list_memories
from session_graph.memory.apply import _put
from session_graph.memory.items import MAX_TERMS, clean_terms, new_value
import session_graph.memory.prefilter as prefilter
from session_graph.memory.recall import remember

DARK = ("User prefers dark mode in the code editor.", ["editor theme", "dark theme", "IDE settings", "appearance"])
FONT = ("User likes a large font size.", ["font", "text size", "IDE settings", "appearance", "editor settings"])


def test_remember_without_a_model_keeps_two_facts_whose_terms_alone_meet_apart() -> None:
    """Terms bridge words: a fact's words found among the other's words or terms. Two facts whose
    own words share almost nothing but whose terms share the generic ones a model gives many facts
    ("IDE settings", "appearance") are two facts; the second must not overwrite the first."""
    memory = MemoryConfig(store=InMemoryStore(), user="bob")
    assert remember(memory, DARK[0], terms=DARK[1]) == "created"
    assert remember(memory, FONT[0], terms=FONT[1]) == "created"
    assert sorted(v["content"] for v in list_memories(memory)) == sorted([DARK[0], FONT[0]])


def test_clean_terms_of_a_huge_reply_reads_no_more_than_it_keeps() -> None:
    """A hostile or runaway model's terms (megabytes of separators, one endless word): cleaned to
    at most MAX_TERMS short terms without making a piece per separator (was 135 MB and seconds
    of CPU for a 6 MB string, once per candidate, while a commit holds the user's lock)."""
    many = "".join(f"t{n}," for n in range(1_000_000))
    endless = "x" * 3_000_000
    tracemalloc.start()
    try:
        kept = clean_terms(many)
        one = clean_terms([endless, {"nested": [endless, "tea"]}])
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert kept == [f"t{n}" for n in range(MAX_TERMS)]
    assert one == ["x" * 60, "tea"]
    assert peak < 1_000_000


def test_an_item_written_while_the_terms_index_is_built_is_found_by_its_terms(monkeypatch: pytest.MonkeyPatch) -> None:
    """The text+terms index is made on first use from the indexed values; a writer that refreshes
    the namespace meanwhile (another thread: a commit, a remember) must not be lost from it."""
    memory = MemoryConfig(store=InMemoryStore(), user="bob")
    store, namespace = memory.memory_store, memory.namespace("preferences")
    first = new_value(namespace, "dark", "preferences", DARK[0], "", DARK[0], [], "test/0", "2026-01-01T00:00:00+00:00",
                      terms=DARK[1])
    _put(store, namespace, "dark", first)
    index = prefilter.indexes(store, [namespace])[0]
    assert index.expanded is None  # made on first use, which is next
    late = new_value(namespace, "laptop", "preferences", "Works on a ThinkPad.", "", "Works on a ThinkPad.", [],
                     "test/1", "2026-01-01T00:00:00+00:00", terms=["Lenovo", "notebook"])
    writer = threading.Thread(target=lambda: (_put(store, namespace, "laptop", late), prefilter.indexes(store, [namespace])[0]))
    real, started = prefilter.terms_text, []

    def build_meanwhile(value: dict) -> str:
        if not started:
            started.append(True)
            writer.start()
            writer.join(timeout=1.0)  # the writer's refresh lands now, unless the build holds it off
        return real(value)

    monkeypatch.setattr(prefilter, "terms_text", build_meanwhile)
    index.with_terms()
    writer.join()
    monkeypatch.setattr(prefilter, "terms_text", real)
    assert [key for key, _ in prefilter.indexes(store, [namespace])[0].with_terms().search("Lenovo notebook", limit=5)] == ["laptop"]


@pytest.mark.parametrize("terms", [{"synonyms": ["laptop"], "translations": ["Notebook"]}, 5, True, [["Lenovo"], 3]])
def test_the_remember_tool_takes_terms_of_any_shape_a_model_sends(terms: object) -> None:
    """The agent's remember tool reads terms as ``remember(..., terms=)`` does: a mapping, a number
    or nested lists from a model are cleaned, never a validation error that loses the fact."""
    memory = MemoryConfig(store=InMemoryStore(), user="bob")
    remember_tool = {tool.name: tool for tool in memory_tools(memory)}["remember"]
    schema = remember_tool.tool_call_schema.model_json_schema()["properties"]["terms"]
    assert "array" in json.dumps(schema)  # the model is still told to send a list of strings
    answer = remember_tool.invoke(ToolCall(name="remember", args={"content": "Works on a ThinkPad.", "terms": terms},
                                           id="call-1", type="tool_call"))
    assert answer.content == "created: Works on a ThinkPad."
    (value,) = list_memories(memory)
    assert value.get("terms", []) == clean_terms(terms)  # True: no terms
