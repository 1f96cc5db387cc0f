"""A small program using the public API as a user would, checked by ``mypy --strict`` (tests/test_typing.py)."""

from __future__ import annotations

from langchain_core.language_models.fake_chat_models import FakeListChatModel
from langchain_core.messages import BaseMessage, HumanMessage, trim_messages

from session_graph import Session, SessionManager, SessionSettings, SessionView
from session_graph.accounting.counters import as_token_counter
from session_graph.accounting.tokens import TokenCounter


def words(text: str) -> int:
    return len(text.split())


def build(path: str) -> tuple[Session, SessionView]:
    model = FakeListChatModel(responses=['{"memo": {"user": "likes tea"}}'])
    settings = SessionSettings({"session.limit": {"tokens": 2000}})
    session: Session = Session(settings=settings, model=model).use_memo(messages=4)
    session.append_message({"role": "user", "content": "hello"})
    session.append_message(HumanMessage(content="and again"))
    session.set_token_counter(words)
    counter: TokenCounter = as_token_counter(words)
    assert counter.count_text("a b") == 2
    kept: list[BaseMessage] = trim_messages(session.current_chat_history, max_tokens=50,
                                            token_counter=session.counter, strategy="last")
    assert len(kept) <= 2
    session.resize("lite")
    memo: dict[str, object] = session.memo
    text: str = session.to_json()
    again = Session.from_json(text)
    assert again.id == session.id and memo is not None
    manager = SessionManager(path)
    stored = manager.get_or_create("user:1")
    stored.append_message({"role": "user", "content": "hi"})
    manager.save(stored)
    exported: str = manager.export("user:1", "json")
    assert exported
    manager.close()
    return session, session.view()
