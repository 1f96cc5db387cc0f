"""A summary or memo over its room gives way first where the window already shows it, so the
room goes to what left the window (compression/novelty.py)."""

from __future__ import annotations

import json

from langchain_core.messages import HumanMessage, SystemMessage

from session_graph import TiktokenCounter, message_tokens
from session_graph.compression.context import MEMO_HEADER, SUMMARY_HEADER, fit_context
from session_graph.compression.novelty import shown_flags, shown_terms
from session_graph.compression.refused import shorten_memo, shorten_summary

COUNTER = TiktokenCounter("o200k_base")
WINDOW = [HumanMessage(content=f"ticket INC-{n} is closed, the export job ran again", id=f"m{n}") for n in range(80, 100)]


def measure(message: SystemMessage) -> int:
    return message_tokens(message, COUNTER)


def tickets(text: str) -> set[int]:
    return {int(part.split("-")[1].split()[0].strip('",]')) for part in text.split("INC")[1:] if part.startswith("-")}


def test_a_line_is_shown_when_its_distinct_terms_are_in_the_window() -> None:
    lines = [f"- closed INC-{n}" for n in range(100)] + ["- closed"]
    flags = shown_flags(lines, shown_terms(WINDOW))
    assert flags[80:100] == [True] * 20 and not any(flags[:80])  # "closed" is on every line: not what makes one distinct
    assert flags[100] is False  # no distinct term: never called shown
    assert shown_flags(lines, frozenset()) == [False] * len(lines)


def test_the_view_drops_what_the_window_shows_before_what_left_it() -> None:
    body = "Key facts and decisions:\n" + "\n".join(f"- ticket INC-{n} closed" for n in range(100))
    message = SystemMessage(content=SUMMARY_HEADER + body)
    plain = fit_context(message, 300, measure)
    aware = fit_context(message, 300, measure, lambda: shown_terms(WINDOW))
    assert plain is not None and aware is not None and measure(aware) <= 300
    assert tickets(plain.text) & set(range(80, 100))  # without the window: the newest, which it shows anyway
    assert not tickets(aware.text) & set(range(80, 100))  # with it: none of those
    assert len(tickets(aware.text) - set(range(80, 100))) > len(tickets(plain.text) - set(range(80, 100)))
    assert aware.response_metadata["session_graph"]["shortening"]["shown_dropped"] == 20


def test_a_memo_drops_its_entries_the_window_shows_first_and_stays_valid_json() -> None:
    memo = {"topic": "support", "closed": [f"INC-{n}" for n in range(100)]}
    aware = fit_context(SystemMessage(content=MEMO_HEADER + json.dumps(memo)), 200, measure, lambda: shown_terms(WINDOW))
    assert aware is not None and measure(aware) <= 200
    shown = json.loads(aware.text[len(MEMO_HEADER) :])
    assert shown["topic"] == "support" and not {int(x[4:]) for x in shown["closed"]} & set(range(80, 100))


def test_a_refused_compression_stores_the_room_and_what_the_window_shows() -> None:
    body = "Key facts and decisions:\n" + "\n".join(f"- ticket INC-{n} closed" for n in range(100))
    stored = shorten_summary(body, 300, measure, shown_terms(WINDOW))
    alone = shorten_summary(body, 300, measure)
    assert set(range(80, 100)) <= tickets(stored)  # kept for when those messages leave the window
    assert tickets(alone) < tickets(stored) and measure(SystemMessage(content=SUMMARY_HEADER + stored)) <= 300 * 3 // 2
    memo = {"closed": [f"INC-{n}" for n in range(100)]}
    assert len(shorten_memo(memo, 150, measure, shown_terms(WINDOW))["closed"]) > len(shorten_memo(memo, 150, measure)["closed"])


def test_when_the_window_shows_more_than_half_a_room_a_refusal_stores_what_left_it_first() -> None:
    body = "Key facts and decisions:\n" + "\n".join(f"- ticket INC-{n} closed" for n in range(100))
    window = [HumanMessage(content=f"ticket INC-{n} is closed", id=f"w{n}") for n in range(30, 100)]  # short messages: many
    stored = shorten_summary(body, 200, measure, shown_terms(window))
    assert tickets(stored) & set(range(30))  # what left the window is kept
    assert measure(SystemMessage(content=SUMMARY_HEADER + stored)) <= 300
    assert not tickets(shorten_summary(body, 200, measure)) & set(range(30))  # oldest first would keep none of it
