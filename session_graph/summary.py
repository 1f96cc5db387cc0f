"""Summary memory: messages that leave the window are folded into a running text summary.

The fold is incremental (the previous summary plus only the messages new since the last
fold) and structured (overview, key facts and decisions, the user's intent, open tasks).
The prompt is replaceable through ``session.summary.prompt``, the whole fold through a
summary handler ``(summary, messages, settings) -> str``.
"""

from __future__ import annotations

import json
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage

from session_graph.errors import MemoUpdateError
from session_graph.memo import message_for_prompt
from session_graph.settings import SessionSettings

__all__ = ["DEFAULT_SUMMARY_PROMPT", "SUMMARY_HEADER", "ModelSummarizer", "build_summary_prompt"]

SUMMARY_HEADER = "Summary of the earlier conversation:\n"
DEFAULT_SUMMARY_PROMPT = """You keep the running summary of a conversation for an assistant whose context is limited.
Fold the new messages into the current summary. Be brief and factual; never invent.
Use exactly these sections:
Overview: <one line>
Key facts and decisions:
- <fact or decision>
User intent: <what the user is trying to achieve>
Open tasks:
- <task not done yet>
Answer with the updated summary only."""


def build_summary_prompt(summary: str, messages: list[BaseMessage], prompt: str | None = None) -> list[BaseMessage]:
    """The two messages sent to the summary model."""
    payload = {"current_summary": summary, "new_messages": [message_for_prompt(m) for m in messages]}
    return [
        SystemMessage(content=prompt or DEFAULT_SUMMARY_PROMPT),
        HumanMessage(content=json.dumps(payload, ensure_ascii=False, default=str)),
    ]


class ModelSummarizer:
    """A summary handler backed by a langchain-core chat model.

    Attributes:
        model: the chat model.
        calls: how many times the model was asked.
        sent_chars: characters sent to the model so far, for measurement.
    """

    def __init__(self, model: BaseChatModel) -> None:
        self.model = model
        self.calls = 0
        self.sent_chars = 0

    async def __call__(self, summary: str, messages: list[BaseMessage], settings: SessionSettings) -> str:
        prompt = build_summary_prompt(summary, messages, settings.resolved().summary_prompt)
        self.calls += 1
        self.sent_chars += sum(len(m.content) for m in prompt if isinstance(m.content, str))
        reply: Any = await self.model.ainvoke(prompt, config={"tags": ["nostream"]})  # never streamed to the agent's user
        text = reply.text.strip() if isinstance(reply, BaseMessage) else ""
        if not text:
            raise MemoUpdateError(f"the summary model's reply has no text: {reply!r:.200}")
        return text
