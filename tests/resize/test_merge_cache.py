"""A ``"merge"`` of the view's system messages is counted once per content, not on every view."""

from __future__ import annotations

from langchain_core.messages import AIMessage, HumanMessage, SystemMessage
from resize_util import WordCounter

from session_graph import Session


def test_the_merged_system_message_is_counted_once_while_the_system_messages_stay_the_same() -> None:
    counter = WordCounter()
    session = Session().configure(limit={"tokens": 5000}, every_n_turns=0)
    session.set_settings("session.view.system_messages", "merge")
    session.set_token_counter(counter)
    session.append_message(SystemMessage(content="You are helpful.", id="sys"))
    session.append_message(HumanMessage(content="hello", id="h0"))
    session.append_message(SystemMessage(content="Answer in French.", id="sys2"))
    merged_text = "You are helpful.\n\nAnswer in French."
    views = []
    for i in range(1, 20):
        session.append_message(HumanMessage(content=f"question {i}", id=f"h{i}"))
        session.append_message(AIMessage(content=f"answer {i}", id=f"a{i}"))
        views.append(session.view())
    assert counter.texts.count(merged_text) == 1, counter.texts.count(merged_text)
    assert counter.texts.count("You are helpful.") == 1  # the system prompt is not re-counted either
    for view in views:
        first = view.messages[0]
        assert first.content == merged_text and first.response_metadata["session_graph"]["merged"] == ["sys", "sys2"]
        assert sum(session.tokens_of(m) for m in view.messages) + 3 == view.tokens  # priming: 3
    # a new system message makes a new merge, counted once
    session.append_message(SystemMessage(content="Be brief.", id="sys3"))
    session.view()
    session.append_message(HumanMessage(content="more", id="h99"))
    view = session.view()
    assert view.messages[0].content == merged_text + "\n\nBe brief."
    assert counter.texts.count(merged_text + "\n\nBe brief.") == 1


def test_a_merge_keeps_every_block_and_is_made_again_after_an_edit_in_place() -> None:
    counter = WordCounter()
    session = Session().configure(limit={"tokens": 5000}, every_n_turns=0)
    session.set_settings("session.view.system_messages", "merge")
    session.set_token_counter(counter)
    cached = {"type": "text", "text": "You are helpful.", "cache_control": {"type": "ephemeral"}}
    image = {"type": "image", "source_type": "url", "url": "https://example.com/chart.png"}
    prompt = SystemMessage(content=[cached, image], id="sys", name="rules", additional_kwargs={"flag": 1})
    later = SystemMessage(content=[{"type": "text", "text": "Answer in French."}], id="sys2")
    session.append_message(prompt)
    session.append_message(HumanMessage(content="hello", id="h0"))
    session.append_message(SystemMessage(content="Be brief.", id="sys3"))
    session.append_message(later)
    session.append_message(HumanMessage(content="question", id="h1"))
    view = session.view()
    first = view.messages[0]
    assert first.content == [cached, image, {"type": "text", "text": "Be brief."}, {"type": "text", "text": "Answer in French."}]
    assert first.content[0] is prompt.content[0]  # the block itself, its cache_control with it
    assert (first.id, first.name, first.additional_kwargs) == ("sys", "rules", {"flag": 1})
    assert first.response_metadata["session_graph"]["merged"] == ["sys", "sys3", "sys2"]
    assert not any(isinstance(m, SystemMessage) for m in view.messages[1:])
    assert sum(session.tokens_of(m) for m in view.messages) + 3 == view.tokens  # priming: 3
    assert session.tokens_of(first) >= session.tokens_of(SystemMessage(content="You are helpful.\n\nBe brief.\n\nAnswer in French."))
    assert prompt.content == [cached, image]  # the stored message is never edited
    # a block edited in place (the caller moves the cache breakpoint): merged again, not the stale one
    later.content[0]["cache_control"] = {"type": "ephemeral"}
    session.append_message(AIMessage(content="oui", id="a1"))
    assert session.view().messages[0].content[-1] == {"type": "text", "text": "Answer in French.", "cache_control": {"type": "ephemeral"}}
    # a content replaced by a string: merged again too
    later.content = "Answer in Spanish."
    session.append_message(HumanMessage(content="again", id="h2"))
    assert session.view().messages[0].content[-1] == {"type": "text", "text": "Answer in Spanish."}
