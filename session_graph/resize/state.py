"""The resize graph's state (the session itself) and its per-run context.

``SessionState`` holds what a session *is*: both histories, the memo, the settings and
the counters, plus a few fields that live only during one resize run (the decision, the
attachment summaries, the memo chunks still to fold, a memo error). ``ResizeContext``
carries what a run *uses* but does not own: handlers and the size/index lookups.
Nodes read both and return a partial update of the state; they never mutate it.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field, fields
from typing import Any

from langchain_core.messages import BaseMessage

from session_graph.accounting.attachments import summarize_attachments
from session_graph.accounting.sizing import message_chars
from session_graph.accounting.tokens import CostRules, TokenCounter
from session_graph.accounting.window import WindowTotals
from session_graph.errors import MemoUpdateError
from session_graph.resize.policy import Decision, PolicyHandler
from session_graph.settings import SessionSettings

__all__ = [
    "AttachmentSummaryHandler",
    "MemoUpdateHandler",
    "ResizeContext",
    "ResizeHandler",
    "SessionState",
    "SummaryHandler",
    "context_of",
]

ResizeHandler = Callable[..., Any]
"""``(full, current, memo, settings) -> (full, current, memo)``, sync or async."""
AttachmentSummaryHandler = Callable[[BaseMessage], "list[dict[str, Any]] | Awaitable[list[dict[str, Any]]]"]
MemoUpdateHandler = Callable[..., "dict[str, Any] | Awaitable[dict[str, Any]]"]
"""``(memo, messages, attachments, settings) -> memo``, sync or async."""
SummaryHandler = Callable[..., "str | Awaitable[str]"]
"""``(summary, messages, settings) -> summary``, sync or async."""


@dataclass
class SessionState:
    """The state of the resize graph: a session.

    Every field up to ``fold_records`` is saved (stores, exports); ``decision`` and the fields
    after it live only during one resize run.

    Attributes:
        id: the session id.
        full_chat_history: every message ever appended; only grows.
        current_chat_history: the window the model sees.
        memo: structured memory (``last_resize`` records the last resize).
        settings: the session's settings.
        turns: assistant replies so far.
        last_resize_turn: the turn of the last successful resize.
        memo_cursor: index in the full history of the first message the memo has not folded.
        memo_ahead: ids of messages past the cursor that are folded already (only after two
            writers merged their saves: each folded what it knew); usually empty.
        archived_through: index in the full history of the first message no commit archived yet.
        usage: ``used()`` records not consumed by a commit yet (dicts: id, ts, type, uri,
            input, output, success, message_id).
        archives: the commit ledger: ``{"next": n, "pending": {archive name: claim}}`` (the
            next archive index and the archives whose commit has not finished).
        fold_records: the fold machinery's own bookkeeping (``fold_failure``,
            ``compression_refused``; see ``compression/records.py``), never shown to the model.
        decision: this run's decision (run-only).
        attachments: attachment summaries by message id for the messages to fold (run-only).
        chunks: [start, end) ranges of the full history still to fold (run-only).
        error: the memo error that stopped this run, if any (run-only).
    """

    id: str
    full_chat_history: list[BaseMessage]
    current_chat_history: list[BaseMessage]
    memo: dict[str, Any]
    settings: SessionSettings
    turns: int = 0
    last_resize_turn: int = 0
    memo_cursor: int = 0
    memo_ahead: frozenset[str] = frozenset()
    archived_through: int = 0
    usage: tuple[dict[str, Any], ...] = ()
    archives: dict[str, Any] = field(default_factory=dict)
    fold_records: dict[str, Any] = field(default_factory=dict)
    # -- run-only fields (never saved) --
    decision: Decision | None = None
    attachments: dict[str, list[dict[str, Any]]] | None = None
    chunks: list[tuple[int, int]] | None = None
    error: MemoUpdateError | None = None


def _no_index(message: BaseMessage) -> int | None:
    return None


@dataclass(frozen=True)
class ResizeContext:
    """What one resize run uses: handlers, lookups and the inputs of the judge.

    Attributes:
        force: ``resize(force=...)``: a type name, True for deep, False to ask the policy.
        policy: the user's policy handler, or None for the default policy.
        resize_handlers: user handlers by resize type.
        attachment_summary: the attachment-summary handler.
        memo_update: the memo-update handler, or None when no model or handler is set.
        size: the size of a message (cached per message by the session).
        index_of: the index of a message in the full history, or None if it is not there.
        totals: the running window totals the default policy reads.
        tokens: the tokens of a message with the counter in use (its chars without one).
        fixed_tokens: tokens every request spends outside the window when the run starts
            (system prompt, the summary or memo as held, reply priming).
        outside: the same for any state (after a fold the summary or memo holds more).
        measure_context: tokens of a summary or memo message (an estimate when counting chars).
        counter: the token counter in use, or None when the session counts chars.
        rules: the per-message cost rules of the counter.
        summarize: the summary handler, or None when no model or handler is set.
        check_folds: whether a summary fold's reply is checked for ignoring its input
            (``compression/fold_check.py``): the library's own model summariser only, never a
            user's handler (its output is the user's call).
        compress_summary: ``(summary, budget, tokens) -> summary``: one request to shorten a
            summary that came back over its budget, or None without a model.
        compress_memo: ``(memo, budget, tokens) -> memo``, likewise for the memo.
        trace: the run's ``trace.TraceRecorder`` (node times, model calls), or None.
    """

    force: Any = False
    policy: PolicyHandler | None = None
    resize_handlers: Mapping[str, ResizeHandler] = field(default_factory=dict)
    attachment_summary: AttachmentSummaryHandler = summarize_attachments
    memo_update: MemoUpdateHandler | None = None
    size: Callable[[BaseMessage], int] = message_chars
    index_of: Callable[[BaseMessage], int | None] = _no_index
    totals: WindowTotals = field(default_factory=WindowTotals)
    tokens: Callable[[BaseMessage], int] = message_chars
    fixed_tokens: int = 0
    outside: Callable[[SessionState], int] = lambda state: 0
    measure_context: Callable[[BaseMessage], int] = message_chars
    counter: TokenCounter | None = None
    rules: CostRules = field(default_factory=CostRules)
    summarize: SummaryHandler | None = None
    check_folds: bool = False
    compress_summary: Callable[..., Any] | None = None
    compress_memo: Callable[..., Any] | None = None
    trace: Any = None


_CONTEXT_FIELDS = frozenset(f.name for f in fields(ResizeContext))


def context_of(**values: Any) -> ResizeContext:
    """``ResizeContext(**values)``; given every field (a run's context, made on every resize), made
    without the frozen dataclass's ``object.__setattr__`` per field (~2.5 of a resize's ~90 us)."""
    if values.keys() != _CONTEXT_FIELDS:
        return ResizeContext(**values)
    context = object.__new__(ResizeContext)
    context.__dict__.update(values)
    return context
