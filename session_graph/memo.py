"""The default memo updater: any langchain-core chat model folds messages into the memo.

The model gets the instructions (``session.memo.instruct``) and a JSON input with
``current_memo``, ``messages`` and ``attachments``; it must answer with a JSON object
``{"memo": {...}}``. The reply is validated with pydantic: anything else is an error,
never silently the memo.
"""

from __future__ import annotations

import json
import re
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from pydantic import BaseModel, ConfigDict, ValidationError

from session_graph.attachments import is_inline_binary, summarize_part
from session_graph.errors import MemoUpdateError
from session_graph.messages import role_of
from session_graph.settings import SessionSettings

__all__ = ["MemoReply", "ModelMemoUpdater", "build_memo_prompt", "message_for_prompt", "parse_memo_reply"]

_FENCE = re.compile(r"^\s*```(?:json)?\s*(.*?)\s*```\s*$", re.DOTALL)


class MemoReply(BaseModel):
    """The reply a memo model must give."""

    model_config = ConfigDict(extra="forbid")
    memo: dict[str, Any]


def message_for_prompt(message: BaseMessage) -> dict[str, Any]:
    """A compact dict of a message for the memo prompt (inline binary replaced by its summary)."""
    content: Any = message.content
    if isinstance(content, list):
        content = [
            {"type": "attachment", **summarize_part(part)} if is_inline_binary(part) else part for part in content
        ]
    data: dict[str, Any] = {"role": role_of(message), "content": content}
    if isinstance(message, AIMessage) and message.tool_calls:
        data["tool_calls"] = [{"id": c.get("id"), "name": c["name"], "args": c["args"]} for c in message.tool_calls]
    if isinstance(message, ToolMessage):
        data["tool_call_id"] = message.tool_call_id
    if message.name:
        data["name"] = message.name
    return data


def build_memo_prompt(
    memo: dict[str, Any],
    messages: list[BaseMessage],
    attachments: list[dict[str, Any]],
    instruct: list[str] | tuple[str, ...],
) -> list[BaseMessage]:
    """The two messages sent to the memo model."""
    rules = "\n".join(f"- {line}" for line in instruct)
    system = (
        "You maintain the memo of a conversation: a JSON object of durable facts.\n"
        f"{rules}\n"
        'Answer with one JSON object and nothing else: {"memo": {...the updated memo...}}.'
    )
    payload = {
        "current_memo": memo,
        "messages": [message_for_prompt(m) for m in messages],
        "attachments": attachments,
    }
    return [SystemMessage(content=system), HumanMessage(content=json.dumps(payload, ensure_ascii=False, default=str))]


def parse_memo_reply(reply: BaseMessage) -> dict[str, Any]:
    """The memo dict from a model reply ``{"memo": {...}}``.

    Raises:
        MemoUpdateError: the reply is not JSON, or not an object with a dict ``memo``.
    """
    text = reply.text if isinstance(reply, BaseMessage) else str(reply)
    match = _FENCE.match(text)
    if match:
        text = match.group(1)
    try:
        data = json.loads(text)
    except json.JSONDecodeError as error:
        raise MemoUpdateError(f"the memo model's reply is not JSON ({error}): {text[:200]!r}") from error
    try:
        return MemoReply.model_validate(data).memo
    except ValidationError as error:
        raise MemoUpdateError(
            f'the memo model\'s reply must be {{"memo": {{...}}}}, got {text[:200]!r}: {error.errors()[0]["msg"]}'
        ) from error


class ModelMemoUpdater:
    """A memo-update handler backed by a langchain-core chat model.

    Attributes:
        model: the chat model.
        calls: how many times the model was asked.
        sent_chars: characters sent to the model so far (prompt text), for measurement.
    """

    def __init__(self, model: BaseChatModel) -> None:
        self.model = model
        self.calls = 0
        self.sent_chars = 0

    async def __call__(
        self,
        memo: dict[str, Any],
        messages: list[BaseMessage],
        attachments: list[dict[str, Any]],
        settings: SessionSettings,
    ) -> dict[str, Any]:
        prompt = build_memo_prompt(memo, messages, attachments, settings.resolved().instruct)
        self.calls += 1
        self.sent_chars += sum(len(m.content) for m in prompt if isinstance(m.content, str))
        reply = await self.model.ainvoke(prompt, config={"tags": ["nostream"]})  # never streamed to the agent's user
        return parse_memo_reply(reply)
