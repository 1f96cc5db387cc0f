"""The default memo updater: any langchain-core chat model folds messages into the memo.

Any chat ``Runnable`` works (a model, ``with_retry()``, ``with_fallbacks()``). One call per
fold: the instructions (``session.memo.instruct``) and the token budget of the memo, then the current memo as JSON and the new messages as a compact transcript. The model
answers ``{"memo": {...}}``; as the spec allows, the bare memo dict is taken too, and the reply
is read the way real models write it (:mod:`session_graph.llm.replies`: fences, prose,
``<think>``, lenient JSON). A reply with no usable memo (cut off, several objects, a
``"memo"`` that is not an object) is an error naming the reason, never silently the memo. A memo over its budget gets one compression request
(:meth:`ModelMemoUpdater.compress`); one the model will not compress is shortened without
it (see ``compression/refused.py``). A reply that is not a memo of what the memo held
(``{"status": "ok"}`` in place of twenty facts) is asked again once, then the fold fails with the
reason and nothing is lost (see ``compression/memo_check.py``).
"""

from __future__ import annotations

import logging
from typing import Any

from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage
from langchain_core.runnables import Runnable
from pydantic import BaseModel, ConfigDict

from session_graph._base.flow import Flow, Invoke, adrive
from session_graph.compression.context import memo_json
from session_graph.compression.memo_check import dropped_reason
from session_graph.compression.transcript import LEAN_LEGEND, transcript
from session_graph.errors import MemoUpdateError, ModelReplyError
from session_graph.llm.names import chat_model
from session_graph.llm.quote import QUOTED_NOTE, quote
from session_graph.llm.replies import memo_of, reply_text, structured, structured_data, wanted_object
from session_graph.settings import SessionSettings

log = logging.getLogger(__name__)

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
        'Answer with one JSON object and nothing else: {"memo": {...the updated memo...}}.\n'
        + f"{LEAN_LEGEND} {QUOTED_NOTE}"
    )
    # the current memo is shown in the shape the answer must have: small models copy the shape they see
    # each message one line, its text a JSON string: no message can forge a turn or a field of this prompt
    body = f'Current memo: {{"memo": {memo_json(memo)}}}\n\nNew messages:\n{transcript(messages, lean=True, quoted=True)}'
    if attachments:
        body += "\n\nAttachments: " + quote(attachments)
    return [SystemMessage(content=system), HumanMessage(content=body)]


def build_memo_compression_prompt(memo: dict[str, Any], budget: int, tokens: int) -> list[BaseMessage]:
    """The request to rewrite a memo that came back over its budget."""
    system = (
        f"Rewrite this memo so that its JSON fits within {budget} tokens (it has about {tokens}). Keep the durable "
        "facts that help future turns and the newest ones; merge related keys, drop the least useful.\n"
        'Answer with one JSON object and nothing else: {"memo": {...}}.'
    )
    return [SystemMessage(content=system), HumanMessage(content=memo_json(memo))]


def parse_memo_reply(reply: Any) -> dict[str, Any]:
    """The memo dict from a model reply: ``{"memo": {...}}`` or the bare memo dict, as real
    models write it (see :mod:`session_graph.llm.replies`).

    Raises:
        MemoUpdateError: the reply holds no usable memo; its message and ``__cause__``
            (a ``ModelReplyError``) give the reason.
    """
    try:
        return wanted_object(reply, "memo", memo_of)
    except ModelReplyError as error:
        raise MemoUpdateError(str(error)) from error


def structured_memo_model(model: Runnable) -> Runnable | None:
    """``model`` asking for a :class:`MemoReply` through its structured output (also inside
    ``with_retry``/``with_fallbacks``), or None where it has none (see ``model_reply.structured``)."""
    return structured(model, MemoReply)


class ModelMemoUpdater:
    """A memo-update handler backed by a chat model, or any chat ``Runnable``
    (``model.with_retry()``, ``model.with_fallbacks([...])``, a model with a rate limiter).

    Where the model supports it (also inside ``with_retry``/``with_fallbacks``/``with_config``),
    the reply is requested with ``with_structured_output``; otherwise (or when the structured
    reply does not validate) its text is read as real models write it (``model_reply``).

    Attributes:
        model: the chat model or Runnable.
        calls: how many times the model was asked (folds and compressions).
        sent_chars: characters sent to the model so far (prompt text), for measurement.
    """

    def __init__(self, model: Runnable | str) -> None:
        self.model = chat_model(model, "the memo model")
        self.structured = structured_memo_model(self.model)
        self.calls = 0
        self.sent_chars = 0

    def _ask(self, prompt: list[BaseMessage]) -> Flow[dict[str, Any]]:
        self.calls += 1
        self.sent_chars += sum(len(m.text) for m in prompt)
        config: Any = {"tags": ["nostream"]}  # never streamed to the agent's user
        if self.structured is None:
            return parse_memo_reply((yield Invoke(self.model, prompt, config)))
        try:
            reply = yield Invoke(self.structured, prompt, config)
        except Exception as error:  # a provider may refuse the schema (OpenAI's strict mode and a free-form dict)
            log.warning("structured output failed (%s: %s); asking for the memo as text", type(error).__name__, error)
            memo = parse_memo_reply((yield Invoke(self.model, prompt, config)))
            self.structured = None  # the text path works where the structured one did not: keep to it
            return memo
        parsed, raw = structured_data(reply, MemoReply)
        return parsed.memo if isinstance(parsed, MemoReply) else parse_memo_reply(raw)

    def flow(
        self, memo: dict[str, Any], messages: list[BaseMessage], attachments: list[dict[str, Any]], settings: SessionSettings
    ) -> Flow[dict[str, Any]]:
        """The fold as a flow (sync or async, see ``_flow``)."""
        limits = settings.resolved()
        prompt = build_memo_prompt(memo, messages, attachments, limits.instruct, memo_budget(settings))
        reply = yield from self._ask(prompt)
        if dropped_reason(memo, reply) is None:
            return reply
        reply = yield from self._ask(prompt)  # once more: a fluke costs one call, not a back-off
        why = dropped_reason(memo, reply)
        if why is None:
            return reply
        raise MemoUpdateError(
            f"the memo model's reply drops what the memo held, twice ({why}); the memo stays as it was "
            "and the messages stay in the window."
        )

    async def __call__(
        self, memo: dict[str, Any], messages: list[BaseMessage], attachments: list[dict[str, Any]], settings: SessionSettings
    ) -> dict[str, Any]:
        return await adrive(self.flow(memo, messages, attachments, settings))

    def compress(self, memo: dict[str, Any], budget: int, tokens: int) -> Flow[dict[str, Any]]:
        """Ask the model once to rewrite ``memo`` within ``budget`` tokens (a flow). A reply that
        drops more of the memo than its room accounts for raises ``MemoUpdateError`` (the caller
        then shortens the memo without the model)."""
        reply = yield from self._ask(build_memo_compression_prompt(memo, budget, tokens))
        why = dropped_reason(memo, reply, budget / max(1, tokens))
        if why is not None:
            raise MemoUpdateError(f"the memo model's compressed memo drops what the memo held ({why})")
        return reply
