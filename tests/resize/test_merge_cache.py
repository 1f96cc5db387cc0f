"""A ``"merge"`` of the view's system messages is counted once per content, not on every view."""

from __future__ import annotations

from langchain_core.messages import AIMessage, HumanMessage, SystemMessage

from session_graph import Session


class CountingCounter:
    """Words as tokens; remembers every text it was asked to count."""

    name = "words"
    exact = True

    def __init__(self) -> None:
        self.texts: list[str] = []

    def count_text(self, text: str) -> int:
        self.texts.append(text)
        return len(text.split())


def test_the_merged_system_message_is_counted_once_while_the_system_messages_stay_the_same() -> None:
    counter = CountingCounter()
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
