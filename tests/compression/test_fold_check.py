"""The ignored-fold check is narrow: other languages and users' handlers are never second-guessed."""

from __future__ import annotations

from typing import Any

from langchain_core.language_models.fake_chat_models import FakeListChatModel
from langchain_core.messages import BaseMessage, HumanMessage

from session_graph import Session
from session_graph.compression.fold_check import ignored_reason

SPANISH = [
    HumanMessage(content="Quiero viajar a la playa el próximo verano con toda mi familia, somos cuatro personas."),
    HumanMessage(content="Tenemos un perro grande y necesitamos un alojamiento que acepte mascotas cerca del mar."),
]


def test_a_conversation_in_another_language_summarised_in_english_is_not_called_ignored() -> None:
    reply = "Overview: the user plans a summer beach trip for a family of four with a large dog; pet-friendly lodging by the sea."
    assert ignored_reason("", SPANISH, reply) is None


def test_names_and_numbers_catch_a_reply_that_ignored_them_in_any_language() -> None:
    fed = [HumanMessage(content="El pedido 48213 sale hacia Berlín el 2026-03-14 con DHL, factura INV-9912, contacto Anna Schmidt en Acme.")]
    assert ignored_reason("", fed, "We talked about travel.") is not None
    assert ignored_reason("", fed, "Order 48213 ships on 2026-03-14 (invoice INV-9912).") is None


def test_a_spanish_session_in_summary_mode_folds_and_prunes() -> None:
    replies = [f"Overview: beach trip planning, part {i}; family of four, a dog, pet-friendly lodging." for i in range(40)]
    model = FakeListChatModel(responses=replies)
    session = Session(model=model).configure(mode="summary", limit={"messages": 6})
    for i in range(12):
        session.append_message(HumanMessage(content=f"Mensaje número {i}: {SPANISH[i % 2].content}"))
        session.append_message({"role": "assistant", "content": "De acuerdo, lo tengo en cuenta para el viaje."})
        if session.judge_resize():
            session.resize()
    assert len(session.current_chat_history) <= 6 + 2
    assert session.memo["summary"].startswith("Overview: beach trip planning")


def test_a_users_summary_handler_is_not_second_guessed() -> None:
    calls: list[int] = []

    def handler(summary: str, messages: list[BaseMessage], settings: Any) -> str:
        calls.append(len(messages))
        return "We talked about travel."  # shares nothing with what it was fed: the user's call

    session = Session(summary_handler=handler).configure(mode="summary", limit={"messages": 6})
    for i in range(8):
        session.append_message(HumanMessage(content=f"Order {48210 + i} ships to Berlin via DHL, invoice INV-{9910 + i}."))
        session.append_message({"role": "assistant", "content": "Noted."})
    session.resize(force="lite")
    assert session.memo["summary"] == "We talked about travel." and len(calls) == 1
