"""``plain_system``: the recalled text's message for counting, made once per text, never a stale one."""

from __future__ import annotations

from langchain_core.messages import SystemMessage

from session_graph import Session
from session_graph.integrations import history_recall
from session_graph.integrations.history_recall import plain_system


def test_one_message_per_text_and_the_same_count() -> None:
    first = plain_system("Recalled: the export fails on the cache key.")
    assert plain_system("Recalled: the export fails on the cache key.") is first
    assert first == SystemMessage(content="Recalled: the export fails on the cache key.")
    session = Session().configure(limit={"tokens": 4000})
    assert session.tokens_of(first) == session.tokens_of(SystemMessage(content=first.content))


def test_an_edited_message_is_not_reused() -> None:
    message = plain_system("edited later")
    message.content = "something else"
    again = plain_system("edited later")
    assert again is not message and again.content == "edited later"
    again.additional_kwargs["cache_control"] = {"type": "ephemeral"}
    fresh = plain_system("edited later")
    assert fresh is not again and fresh.additional_kwargs == {}


def test_held_texts_are_bounded() -> None:
    for i in range(100):
        assert plain_system(f"text {i}").content == f"text {i}"
    assert len(history_recall._PLAIN_SYSTEMS) <= 16
