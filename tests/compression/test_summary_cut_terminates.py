"""The view shortens a summary to any room and ends: a section whose heading line is long and
whose list is cut down to one item used to be "cut" by 0 characters forever (only its items were
cut, never its heading), so ``fit_context`` (the view, and ``shorten_summary`` in a fold) spun
without end once the room was small (a large system prompt and user message leave the summary
little). Each measure is counted: a shortening that stops making progress fails, not hangs."""

from __future__ import annotations

from langchain_core.messages import SystemMessage
import pytest

from session_graph.compression.context import SUMMARY_HEADER, fit_context, summary_body, summary_content
from session_graph.compression.refused import shorten_summary

LONG_HEADING = "Open tasks: " + "the review of the booking for the trip to Oslo " * 6 + "\n- confirm the hotel"
TWO_SECTIONS = "Overview: " + "trip planning for a family of four " * 4 + "\n- flights\n- hotel\nKey facts and decisions: " + (
    "the budget is two thousand euros and the dates are fixed " * 4) + "\n- one item"


class Bounded:
    """A char measure that refuses to be called without end."""

    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, message: SystemMessage) -> int:
        self.calls += 1
        if self.calls > 2_000:
            raise AssertionError("the shortening makes no progress: measured 2,000 times")
        return len(message.text)


@pytest.mark.parametrize("text", [LONG_HEADING, TWO_SECTIONS])
@pytest.mark.parametrize("room", [40, 60, 90, 150, 200])
def test_a_summary_with_a_long_heading_is_shortened_to_any_room(text: str, room: int) -> None:
    message = SystemMessage(content=summary_content(text))
    fitted = fit_context(message, room, Bounded())
    if fitted is not None:
        assert len(fitted.text) <= room and fitted.text.startswith(SUMMARY_HEADER)
        assert summary_body(fitted.text) != fitted.text[len(SUMMARY_HEADER) :]  # still one JSON string
    shortened = shorten_summary(text, room, Bounded())
    assert len(shortened) <= len(text)
