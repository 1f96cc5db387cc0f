"""A model that will not compress: what the stored summary or memo drops first is what the window
will still show after this resize, never the lines of the messages this same resize folds and
evicts (they are in the window while it folds, but those lines are the only trace of them)."""

from __future__ import annotations

import json
import re
from typing import Any

from langchain_core.language_models.chat_models import SimpleChatModel
from langchain_core.messages import AIMessage, HumanMessage
import pytest

from session_graph import Session


class IgnoringModel(SimpleChatModel):
    """Folds one line (or memo entry) per ticket it is shown; a compression request gets its input back."""

    memo: bool = False

    def _call(self, messages: Any, stop: Any = None, run_manager: Any = None, **kwargs: Any) -> str:
        text = messages[-1].content
        if "New messages:" not in text:  # a compression request: the summary or memo back, whole
            if self.memo:
                return json.dumps({"memo": json.loads(text)})
            found = re.search(r"(Key facts and decisions:[\s\S]*)", text)
            return found.group(1) if found else text
        old, new = text.split("New messages:", 1)
        tickets = list(dict.fromkeys(re.findall(r"INC-(\d+)", new)))
        if self.memo:
            memo = json.loads(old.split("Current memo:", 1)[1].strip())["memo"]
            closed = [*memo.get("closed", []), *(f"ticket INC-{n} closed by the export job" for n in tickets)]
            return json.dumps({"memo": {"closed": closed}})
        old = old.split("Current summary:", 1)[1].strip() if "Current summary:" in old else ""
        base = old if old.startswith("Key facts") else "Key facts and decisions:"
        return "\n".join([base, *(f"- ticket INC-{n} was closed by the export job" for n in tickets)])

    @property
    def _llm_type(self) -> str:
        return "ignoring-budgets"


@pytest.mark.parametrize("mode", ["summary", "memo"])
def test_a_refused_compression_keeps_the_lines_of_what_the_same_resize_folds_and_evicts(mode: str) -> None:
    session = Session(model=IgnoringModel(memo=mode == "memo")).configure(mode=mode, limit={"tokens": 1200})
    session.set_settings("session.tokens.prune_to_ratio", 0.8)
    session.set_settings("session.summary.reserve_tokens", 150)
    evicted = kept = 0
    for n in range(400):
        session.append_message(HumanMessage(content=f"is ticket INC-{n} closed?", id=f"q{n}"))
        session.append_message(AIMessage(content=f"yes, INC-{n} is closed now", id=f"a{n}"))
        before, cursor = {m.id for m in session.current_chat_history}, session.memo_cursor
        if not session.judge_resize():
            continue
        session.resize()
        folded = {m.id for m in session.full_chat_history[cursor : session.memo_cursor]}
        left = {int(i[1:]) for i in (before & folded) - {m.id for m in session.current_chat_history}}
        stored = json.dumps(session.memo_for_model) if mode == "memo" else session.memo.get("summary", "")
        held = {int(x) for x in re.findall(r"INC-(\d+)", stored)}
        evicted += len(left)
        kept += len(left & held)
    assert evicted >= 24  # folded and evicted by the same resize, many times
    assert kept >= 0.9 * evicted, f"{evicted - kept} of {evicted} messages folded and evicted at once are in neither the window nor the {mode}"
