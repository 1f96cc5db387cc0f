"""Test helpers shared by the resize and integrations tests: which executor each resize chose, and a counter of words."""

from __future__ import annotations

from typing import Any

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


class WordCounter:
    """Words as tokens; remembers every text it was asked to count."""

    name = "words"
    exact = True

    def __init__(self) -> None:
        self.texts: list[str] = []

    def count_text(self, text: str) -> int:
        self.texts.append(text)
        return len(text.split())
