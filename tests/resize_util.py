"""Test helpers shared by the resize and integrations tests: which executor each resize chose, a session over
its window's limit, and a counter of words."""

from __future__ import annotations

from typing import Any

from langchain_core.messages import AIMessage, HumanMessage
import pytest

from session_graph.resize import session_run
from session_graph.resize.direct import FORCE_PREGEL_ENV


def executor_choices(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """Whether each resize's ``select`` chose the direct executor (True) or Pregel (False), in order."""
    monkeypatch.delenv(FORCE_PREGEL_ENV, raising=False)  # the suite may run with Pregel forced: these tests read the default choice
    picks: list[bool] = []
    real = session_run.select

    def select(graph: Any, handlers: Any, *, sync: bool) -> Any:
        plan = real(graph, handlers, sync=sync)
        picks.append(plan is not None)
        return plan

    monkeypatch.setattr(session_run, "select", select)
    return picks


def pruning(session: Any) -> Any:
    """``session`` with 12 turns appended (24 messages of 20 words, ids q0, a0, ...): over a window
    of 6 messages, so its next resize prunes."""
    for i in range(12):
        session.append_message(HumanMessage(content=f"q{i} " * 20, id=f"q{i}"))
        session.append_message(AIMessage(content=f"a{i} " * 20, id=f"a{i}"))
    return session


class WordCounter:
    """Words as tokens; remembers every text it was asked to count."""

    name = "words"
    exact = True

    def __init__(self) -> None:
        self.texts: list[str] = []

    def count_text(self, text: str) -> int:
        self.texts.append(text)
        return len(text.split())
