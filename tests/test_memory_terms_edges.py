"""Edges of retrieval terms found in review (issue 22): the no-model remember rule and terms as a
model really writes them (generic words shared by many facts of one user)."""

from __future__ import annotations

from langgraph.store.memory import InMemoryStore

from session_graph.memory import MemoryConfig, list_memories
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
