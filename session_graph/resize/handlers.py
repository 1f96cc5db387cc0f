"""A session's pluggable behaviour: policy, resize handlers, attachment, memo and summary
handlers, the chat model behind the default memo and summary, node overrides, and the
per-run context the resize graph gets from them.

Precedence: an explicit handler wins over the model-backed default (``model``), and a
resize handler for ``lite`` or ``deep`` replaces that whole default route.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from langchain_core.runnables import Runnable
from langgraph.graph.state import CompiledStateGraph

from session_graph.accounting.attachments import summarize_attachments
from session_graph.compression.memo import ModelMemoUpdater
from session_graph.compression.summary import ModelSummarizer
from session_graph.errors import ConfigurationError
from session_graph.llm.names import chat_model
from session_graph.resize.graph import build_resize_graph
from session_graph.resize.ledger import Ledger
from session_graph.resize.policy import PolicyHandler
from session_graph.resize.state import (
    AttachmentSummaryHandler,
    MemoUpdateHandler,
    ResizeContext,
    ResizeHandler,
    SessionState,
    SummaryHandler,
    context_of,
)
from session_graph.resize.trace_recording import TraceRecorder
from session_graph.settings import Limits

__all__ = ["Handlers", "checked_callable"]


def checked_callable(value: Any, what: str) -> Any:
    """``value`` if it is callable or None, else a ConfigurationError naming ``what``."""
    if value is not None and not callable(value):
        raise ConfigurationError(f"the {what} must be callable (sync or async), got {type(value).__name__}.")
    return value


class Handlers:
    """What a session calls out to; every setter validates before it changes anything."""

    def __init__(
        self,
        *,
        policy: PolicyHandler | None = None,
        resize_handlers: Mapping[str, ResizeHandler] | None = None,
        attachment_summary: AttachmentSummaryHandler | None = None,
        memo_update: MemoUpdateHandler | None = None,
        summary: SummaryHandler | None = None,
        model: Runnable | str | None = None,
    ) -> None:
        model = chat_model(model) if model is not None else None
        self.policy = checked_callable(policy, "policy handler")
        self.overrides: dict[str, Callable[..., Any]] = {}
        self.resize: dict[str, ResizeHandler] = {}
        for resize_type, handler in (resize_handlers or {}).items():
            self.set_resize(resize_type, handler)
        self.attachment_summary = checked_callable(attachment_summary, "attachment summary handler")
        self.memo_update = checked_callable(memo_update, "memo update handler")
        self.summary = checked_callable(summary, "summary handler")
        self.model = model
        self.model_updater = ModelMemoUpdater(model) if model is not None else None
        self.model_summarizer = ModelSummarizer(model) if model is not None else None

    def set_resize(self, resize_type: str, handler: ResizeHandler | None) -> None:
        """Route ``resize_type`` to ``handler`` (None removes it)."""
        if not isinstance(resize_type, str) or not resize_type:
            raise ConfigurationError(f"a resize type must be a non-empty string, got {resize_type!r}.")
        if handler is None:
            self.resize.pop(resize_type, None)
            return
        checked_callable(handler, f"resize handler for {resize_type!r}")
        build_resize_graph(resize_types=[*self.resize, resize_type], overrides=self.overrides)  # validates the name
        self.resize[resize_type] = handler

    def override(self, name: str, node: Callable[..., Any] | None) -> None:
        """Replace one built-in node of the resize graph (None restores it)."""
        overrides = {k: v for k, v in self.overrides.items() if k != name}
        if node is not None:
            overrides[name] = node
        build_resize_graph(resize_types=self.resize, overrides=overrides)  # validates
        self.overrides = overrides

    @property
    def graph(self) -> CompiledStateGraph:
        """The compiled resize graph for these handlers and overrides (the whole policy, as drawn)."""
        return build_resize_graph(resize_types=self.resize, overrides=self.overrides)

    def runner(self, limits: Limits, *, sync: bool, start: str | None = None) -> CompiledStateGraph:
        """The graph a resize runs: only the nodes the session's mode can visit, sync or async nodes;
        ``start``: the type decided before the run (the graph goes straight into its route)."""
        mode = "memo" if limits.memo_enabled else "summary" if limits.summary_enabled else "lite"
        return build_resize_graph(resize_types=self.resize, overrides=self.overrides, mode=mode, sync=sync, start=start)

    def context(self, force: Any, state: SessionState, ledger: Ledger, limits: Limits,
                recorder: TraceRecorder | None = None) -> ResizeContext:
        """What one resize run uses (``recorder``: the run's, its memo and summary calls counted)."""
        def count(fn: Any, fold: bool) -> Any:
            return fn if recorder is None else recorder.counting(fn, fold=fold)

        context = context_of(  # every field: ResizeContext(...) without its frozen per-field setattr
            force=force,
            policy=self.policy,
            resize_handlers=dict(self.resize),
            attachment_summary=self.attachment_summary or summarize_attachments,
            memo_update=count(self.memo_update or self.model_updater, True),
            size=ledger.size,
            index_of=ledger.index_of,
            totals=ledger.totals,
            tokens=ledger.tokens if ledger.tokens is not None else ledger.size,  # ledger.token_count, one call less a message
            fixed_tokens=ledger.fixed_tokens(state, limits),
            outside=lambda current: ledger.fixed_tokens(current, current.settings.resolved()),
            measure_context=ledger.measure_context,
            counter=ledger.counter if ledger.tokens is not None else None,
            rules=ledger.rules,
            summarize=count(self.summary or self.model_summarizer, True),
            check_folds=self.summary is None and self.model_summarizer is not None,
            compress_summary=count(self.model_summarizer.compress if self.model_summarizer is not None else None, False),
            compress_memo=count(self.model_updater.compress if self.model_updater is not None else None, False),
            trace=recorder,
        )
        return context if recorder is None else recorder.bind(context)
