"""A fold's chunk is sized by what the fold sends: each message's quoted transcript line, whose
escapes (a quote, a backslash or a line break is two characters there) count. Sized by the raw
message, an escape-heavy chunk (code, JSON, quoted speech) was sent over its size.

The model is a recording fake; what is tested is the transcript our code sends it."""

from __future__ import annotations

from conftest import fake_model
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage
import pytest

from session_graph import Session

CODE = 'print("a\\\\b")\n' * 12  # every line: quotes, a backslash pair and a line break, all escaped when quoted


def sent_lines(prompt: list) -> list[str]:
    return prompt[1].content.split("\n\nNew messages:\n", 1)[1].split("\n\nAttachments: ")[0].splitlines()


@pytest.mark.parametrize("limit", [{"tokens": 3000}, {"chars": 12_000}])
def test_each_fold_sends_at_most_its_chunk_counting_the_escapes(limit: dict[str, int]) -> None:
    model = fake_model(*["Overview: code review\nKey facts and decisions:\n- prints"] * 40)
    session = Session(model=model).configure(mode="summary", limit=limit)
    session.set_settings("session.memo.chunk_tokens", 400)
    session.set_settings("session.summary.reserve_tokens", 200)
    for i in range(40):
        session.append_message(HumanMessage(content=f"review {i}:\n{CODE}", id=f"u{i}"))
        session.append_message(AIMessage(content=f'looks fine "{i}"\n{CODE}', id=f"a{i}"))
    session.resize(force="deep")
    assert len(model.prompts) >= 3
    for prompt in model.prompts:
        lines = sent_lines(prompt)
        if "tokens" in limit:  # each line as the chunk measures a message: a message of its own
            sent = sum(session.tokens_of(SystemMessage(content=line)) for line in lines)
        else:
            sent = sum(len(line) for line in lines)
        assert sent <= (400 if "tokens" in limit else 400 * 4), (sent, len(lines))
