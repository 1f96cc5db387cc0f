"""The default memo updater: any langchain-core chat model folds messages into the memo.

Any chat ``Runnable`` works (a model, ``with_retry()``, ``with_fallbacks()``). One call per
fold: the instructions (``session.memo.instruct``) and the token budget of the memo, then the current memo as JSON and the new messages as a compact transcript. The model
answers ``{"memo": {...}}``; the reply is validated with pydantic: anything else is an
error, never silently the memo. A memo over its budget gets one compression request
(:meth:`ModelMemoUpdater.compress`); the session keeps the model's whole memo either way.
"""

from __future__ import annotations

import json
import re
from typing import Any

from langchain_core.exceptions import OutputParserException
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage
from langchain_core.runnables import Runnable
from langchain_core.utils.json import parse_json_markdown
from pydantic import BaseModel, ConfigDict, ValidationError

from session_graph._base.flow import Flow, Invoke, adrive
from session_graph.compression.context import memo_json
from session_graph.errors import MemoUpdateError
from session_graph.settings import SessionSettings
from session_graph.compression.transcript import transcript

__all__ = [
    "MemoReply",
    "ModelMemoUpdater",
    "build_memo_compression_prompt",
    "build_memo_prompt",
    "memo_budget",
    "parse_memo_reply",
    "reply_text",
    "structured_memo_model",
]

_THINK = re.compile(r"<think>.*?</think>", re.DOTALL)
_HEADER_TOKENS = 16  # the memo message's header and overhead, kept off the memo's budget


class MemoReply(BaseModel):
    """The reply a memo model must give."""

    model_config = ConfigDict(extra="forbid")
    memo: dict[str, Any]


def memo_budget(settings: SessionSettings) -> int:
    """Tokens the memo's JSON may use: the reserve less the message's header."""
    return max(16, settings.resolved().reserve_tokens - _HEADER_TOKENS)


def build_memo_prompt(
    memo: dict[str, Any],
    messages: list[BaseMessage],
    attachments: list[dict[str, Any]],
    instruct: list[str] | tuple[str, ...],
    budget: int,
) -> list[BaseMessage]:
    """The two messages sent to the memo model: instructions once, then memo and transcript."""
    rules = "\n".join(f"- {line}" for line in instruct)
    system = (
        "You maintain the memo of a conversation: a JSON object of durable facts.\n"
        f"{rules}\n"
        f"- Keep the memo within {budget} tokens of JSON: merge or drop what matters least.\n"
        'Answer with one JSON object and nothing else: {"memo": {...the updated memo...}}.'
    )
    body = f"Current memo: {memo_json(memo)}\n\nNew messages:\n{transcript(messages)}"
    if attachments:
        body += "\n\nAttachments: " + json.dumps(attachments, ensure_ascii=False, default=str)
    return [SystemMessage(content=system), HumanMessage(content=body)]


def build_memo_compression_prompt(memo: dict[str, Any], budget: int, tokens: int) -> list[BaseMessage]:
    """The request to rewrite a memo that came back over its budget."""
    system = (
        f"Rewrite this memo so that its JSON fits within {budget} tokens (it has about {tokens}). Keep the durable "
        "facts that help future turns and the newest ones; merge related keys, drop the least useful.\n"
        'Answer with one JSON object and nothing else: {"memo": {...}}.'
    )
    return [SystemMessage(content=system), HumanMessage(content=memo_json(memo))]


def reply_text(reply: Any) -> str:
    """The text of a model reply, without any ``<think>`` block."""
    text = reply.text if isinstance(reply, BaseMessage) else str(reply)
    return _THINK.sub("", text).strip()


def parse_memo_reply(reply: Any) -> dict[str, Any]:
    """The memo dict from a model reply ``{"memo": {...}}`` (a Markdown fence is fine).

    Raises:
        MemoUpdateError: the reply is not JSON (truncated JSON included), or not an object with a dict ``memo``.
    """
    text = reply_text(reply)
    try:
        data = parse_json_markdown(text, parser=json.loads)
    except (OutputParserException, ValueError) as error:
        raise MemoUpdateError(f"the memo model's reply is not JSON ({error}): {text[:200]!r}") from error
    try:
        return MemoReply.model_validate(data).memo
    except ValidationError as error:
        raise MemoUpdateError(
            f'the memo model\'s reply must be {{"memo": {{...}}}}, got {text[:200]!r}: {error.errors()[0]["msg"]}'
        ) from error


def structured_memo_model(model: Runnable) -> Runnable | None:
    """``model.with_structured_output(MemoReply, include_raw=True)`` where the model supports it, else None."""
    if not isinstance(model, BaseChatModel):
        return None  # a wrapper (with_retry, with_fallbacks...): its replies are parsed as text
    try:
        return model.with_structured_output(MemoReply, include_raw=True)
    except (NotImplementedError, ValueError, TypeError):
        return None


class ModelMemoUpdater:
    """A memo-update handler backed by a chat model, or any chat ``Runnable``
    (``model.with_retry()``, ``model.with_fallbacks([...])``, a model with a rate limiter).

    Where the model supports it, the reply is requested with ``with_structured_output``;
    otherwise (or when the structured reply does not parse) its text is parsed as JSON.

    Attributes:
        model: the chat model or Runnable.
        calls: how many times the model was asked (folds and compressions).
        sent_chars: characters sent to the model so far (prompt text), for measurement.
    """

    def __init__(self, model: Runnable) -> None:
        self.model = model
        self.structured = structured_memo_model(model)
        self.calls = 0
        self.sent_chars = 0

    def _ask(self, prompt: list[BaseMessage]) -> Flow[dict[str, Any]]:
        self.calls += 1
        self.sent_chars += sum(len(m.text) for m in prompt)
        config: Any = {"tags": ["nostream"]}  # never streamed to the agent's user
        if self.structured is None:
            return parse_memo_reply((yield Invoke(self.model, prompt, config)))
        result = yield Invoke(self.structured, prompt, config)
        if isinstance(result, dict) and isinstance(result.get("parsed"), MemoReply):
            return result["parsed"].memo
        return parse_memo_reply(result.get("raw") if isinstance(result, dict) else result)

    def flow(
        self, memo: dict[str, Any], messages: list[BaseMessage], attachments: list[dict[str, Any]], settings: SessionSettings
    ) -> Flow[dict[str, Any]]:
        """The fold as a flow (sync or async, see ``_flow``)."""
        limits = settings.resolved()
        prompt = build_memo_prompt(memo, messages, attachments, limits.instruct, memo_budget(settings))
        return (yield from self._ask(prompt))

    async def __call__(
        self, memo: dict[str, Any], messages: list[BaseMessage], attachments: list[dict[str, Any]], settings: SessionSettings
    ) -> dict[str, Any]:
        return await adrive(self.flow(memo, messages, attachments, settings))

    def compress(self, memo: dict[str, Any], budget: int, tokens: int) -> Flow[dict[str, Any]]:
        """Ask the model once to rewrite ``memo`` within ``budget`` tokens (a flow)."""
        return (yield from self._ask(build_memo_compression_prompt(memo, budget, tokens)))
