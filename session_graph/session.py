"""Session: the facade with the spec's API over the state and the resize graph.

A turn costs O(size of the new message): ``append_message`` normalises it once, measures
it once and updates running totals; ``judge_resize`` reads those totals. ``resize`` runs
the LangGraph resize graph on the state and commits its result in one step, so a failure
anywhere leaves the session as it was (a memo failure keeps what the memo folded, see
``MemoUpdateError``). Sync methods work inside a running event loop too.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
import contextlib
import dataclasses
from typing import Any, Literal, Self

from langchain_core.messages import BaseMessage, convert_to_openai_messages
from langchain_core.runnables import Runnable
from langgraph.graph.state import CompiledStateGraph

from session_graph._base.flow import Flow, adrive, drive
from session_graph._base.ids import new_id, utc_now
from session_graph.compression.context import memo_for_model
from session_graph.errors import ConfigurationError, SessionGraphError
from session_graph.interop.export import SessionExport
from session_graph.resize.handlers import Handlers, checked_callable
from session_graph.resize.ledger import Ledger, system_prompt
from session_graph.memory.config import MemoryConfig
from session_graph.messages import MessageInput, check_storable, role_of, to_message
from session_graph.interop.nanobot import session_history
from session_graph.resize.nodes.judge import judge_state
from session_graph.memory.parts import has_extras, strip_view
from session_graph.resize.policy import Decision, PolicyHandler
from session_graph.resize.run import ResizeEvent, ResizeOutcome, run_resize, run_resize_sync
from session_graph.commit.session_commit import SessionCommit
from session_graph.display.session_display import SessionDisplay
from session_graph.memory.session_parts import SessionParts
from session_graph.settings import SessionSettings
from session_graph.resize.state import (
    AttachmentSummaryHandler,
    MemoUpdateHandler,
    ResizeContext,
    ResizeHandler,
    SessionState,
    SummaryHandler,
)
from session_graph.accounting.tokens import TokenCounter
from session_graph.resize.trace import ResizeTrace
from session_graph.resize.trace_recording import TraceRecorder
from session_graph.resize.view import SessionView, ViewBuilder, answered
from session_graph.accounting.window import WindowTotals

__all__ = ["Session"]

Force = Literal["lite", "deep"] | str | bool | None


class Session(SessionExport, SessionDisplay, SessionParts, SessionCommit):
    """A chat session: full history, current window, memo, and the policy that resizes.

    Args:
        id: the session id; a uuid4 hex when not given.
        settings: a ``SessionSettings`` or a dict (nested or dotted keys under ``session.``).
        policy_handler: ``(full, current, settings) -> None | str | dict``, sync or async.
        resize_handlers: ``{type: (full, current, memo, settings) -> (full, current, memo)}``.
        attachment_summary_handler: ``(message) -> list[dict]``.
        memo_update_handler: ``(memo, messages, attachments, settings) -> dict``.
        model: a langchain-core chat model, or any chat Runnable (``model.with_retry()``,
            ``model.with_fallbacks([...])``), that updates the memo in memo mode and the
            summary in summary mode (explicit handlers take precedence).
        summary_handler: ``(summary, messages, settings) -> str``, for summary mode.
        memory: a ``MemoryConfig``: where ``commit()`` writes long-term memories, and whose they are.

    Example:
        >>> session = Session(settings={"session.limit": {"chars": 60}})
        >>> _ = session.append_message({"role": "user", "content": "hello " * 10})
        >>> _ = session.append_message({"role": "assistant", "content": "hi!"})
        >>> session.judge_resize()["type"]
        'deep'
    """

    def __init__(
        self,
        id: str | None = None,
        *,
        settings: SessionSettings | Mapping[str, Any] | None = None,
        policy_handler: PolicyHandler | None = None,
        resize_handlers: Mapping[str, ResizeHandler] | None = None,
        attachment_summary_handler: AttachmentSummaryHandler | None = None,
        memo_update_handler: MemoUpdateHandler | None = None,
        model: Runnable | None = None,
        summary_handler: SummaryHandler | None = None,
        memory: MemoryConfig | None = None,
    ) -> None:
        if id is not None and (not isinstance(id, str) or not id):
            raise ConfigurationError(f"the session id must be a non-empty string, got {id!r}.")
        if isinstance(settings, SessionSettings):
            settings = settings.to_dict()
        elif settings is not None and not isinstance(settings, Mapping):
            raise ConfigurationError(f"settings must be a SessionSettings or a dict, got {type(settings).__name__}.")
        if memory is not None and not isinstance(memory, MemoryConfig):
            raise ConfigurationError(f"memory must be a MemoryConfig, got {type(memory).__name__}.")
        self.memory = memory
        self.handlers = Handlers(
            policy=policy_handler,
            resize_handlers=resize_handlers,
            attachment_summary=attachment_summary_handler,
            memo_update=memo_update_handler,
            summary=summary_handler,
            model=model,
        )
        self._resizing = False
        self._view: tuple[Any, SessionView] | None = None
        self._views = ViewBuilder()  # extends the last view in O(new messages) when it can
        self.trace = ResizeTrace()  # one record per resize: route, times, effect, cost (see trace.py)
        self.metadata: dict[str, Any] = {}
        self.arrived_at: dict[str, str] = {}  # message id -> UTC arrival time (kept by stores)
        self.revision = 0  # bumps on every change a store must see (append, resize, load, clear)
        self.cleared = False  # set by clear(); the next save replaces what the store holds
        self._install(
            SessionState(
                id=id or new_id(),
                full_chat_history=[],
                current_chat_history=[],
                memo={},
                settings=SessionSettings(settings),
            )
        )

    # -- state, as the spec names it -----------------------------------------------------
    @property
    def id(self) -> str:
        return self._state.id

    @property
    def full_chat_history(self) -> list[BaseMessage]:
        """Every message ever appended (do not edit in place: use append_message)."""
        return self._state.full_chat_history

    @property
    def current_chat_history(self) -> list[BaseMessage]:
        """The window the model sees."""
        return self._state.current_chat_history

    @property
    def memo(self) -> dict[str, Any]:
        return self._state.memo

    @property
    def settings(self) -> SessionSettings:
        return self._state.settings

    @property
    def turns(self) -> int:
        return self._state.turns

    @property
    def last_resize_turn(self) -> int:
        return self._state.last_resize_turn

    @property
    def memo_cursor(self) -> int:
        return self._state.memo_cursor

    @property
    def memo_ahead(self) -> frozenset[str]:
        """Ids past the cursor the memo folded already (only after two writers' saves merged)."""
        return self._state.memo_ahead

    @property
    def window_totals(self) -> WindowTotals:
        """Running totals of the window (chars, messages, newest unit)."""
        return self._ledger.totals

    @property
    def memo_for_model(self) -> dict[str, Any]:
        """The memo as a model sees it (without ``last_resize``)."""
        return memo_for_model(self._state.memo)

    @property
    def resize_events(self) -> list[ResizeEvent]:
        """The resizes that committed, oldest first (a smaller view of ``session.trace``)."""
        return self.trace.events()

    @property
    def state(self) -> SessionState:
        """The session as the resize graph's state."""
        return self._state

    # -- settings ------------------------------------------------------------------------
    def set_settings(self, key: str, value: Any) -> Self:
        """Replace the setting at a dotted key (``"session.limit"``, ``"session.mode"``...)."""
        self._state.settings.set(key, value)
        self.revision += 1
        return self

    def configure(
        self,
        *,
        mode: Literal["lite", "memo"] | None = None,
        limit: Mapping[str, int | None] | None = None,
        every_n_turns: int | None = None,
    ) -> Self:
        """Set mode, limit and cadence at once; nothing changes if any value is invalid."""
        staged = SessionSettings(self._state.settings.to_dict())
        if mode is not None:
            staged.set("session.mode", mode)
        if limit is not None:
            staged.set("session.limit", dict(limit))
        if every_n_turns is not None:
            staged.set("session.resize.every_n_turns", every_n_turns)
        self._state.settings = staged
        self.revision += 1
        return self

    def use_lite(self, *, chars: int | None = None, messages: int | None = None, every_n_turns: int | None = None) -> Self:
        """Lite mode: prune to the limits, no memo (clears an explicit memo.enabled)."""
        return self._use("lite", chars, messages, every_n_turns)

    def use_memo(self, *, chars: int | None = None, messages: int | None = None, every_n_turns: int | None = None) -> Self:
        """Memo mode: fold messages into the memo before they leave the window."""
        return self._use("memo", chars, messages, every_n_turns)

    def _use(self, mode: str, chars: int | None, messages: int | None, every_n_turns: int | None) -> Self:
        limit = {k: v for k, v in (("chars", chars), ("messages", messages)) if v is not None}
        self.configure(mode=mode, limit=limit or None, every_n_turns=every_n_turns)  # type: ignore[arg-type]
        self._state.settings.set("session.memo.enabled", None)
        return self

    # -- handlers ------------------------------------------------------------------------
    def set_policy_handler(self, policy_handler: PolicyHandler | None) -> Self:
        """Replace the policy (None restores the default)."""
        self.handlers.policy = checked_callable(policy_handler, "policy handler")
        return self

    def set_resize_handlers(self, resize_type: str, resize_handler: ResizeHandler | None) -> Self:
        """Route ``resize_type`` to a handler (None removes it; lite/deep fall back to the defaults)."""
        self.handlers.set_resize(resize_type, resize_handler)
        return self

    def set_attachment_summary_handler(self, attachment_summary_handler: AttachmentSummaryHandler | None) -> Self:
        self.handlers.attachment_summary = checked_callable(attachment_summary_handler, "attachment summary handler")
        return self

    def set_memo_update_handler(self, memo_update_handler: MemoUpdateHandler | None) -> Self:
        self.handlers.memo_update = checked_callable(memo_update_handler, "memo update handler")
        return self

    def set_summary_handler(self, summary_handler: SummaryHandler | None) -> Self:
        """Replace the summary fold of summary mode: ``(summary, messages, settings) -> str``."""
        self.handlers.summary = checked_callable(summary_handler, "summary handler")
        return self

    def override_node(self, name: str, node: Callable[..., Any] | None) -> Self:
        """Replace one built-in node of the resize graph (None restores it)."""
        self.handlers.override(name, node)
        return self

    @property
    def model(self) -> Runnable | None:
        """The chat model behind the default memo and summary updates."""
        return self.handlers.model

    # -- what the model sees -------------------------------------------------------------
    @property
    def counter(self) -> TokenCounter:
        """The token counter in use (``counter.name`` says which; ``chars`` without a token budget)."""
        self._ledger.sync(self._state, self._state.settings.resolved())
        return self._ledger.counter

    def view(self, *, outside_tokens: int = 0) -> SessionView:
        """Exactly the messages to send to a model: system prompt, summary or memo, window.

        Under ``session.limit.tokens`` its ``tokens`` never exceed the budget.
        ``outside_tokens``: what the request spends beyond the view (an agent's own system
        prompt); it comes off the budget (see ``tokens_of``).
        """
        if isinstance(outside_tokens, bool) or not isinstance(outside_tokens, int) or outside_tokens < 0:
            raise ConfigurationError(f"outside_tokens must be a whole number >= 0, got {outside_tokens!r}.")
        limits = self._state.settings.resolved()
        self._ledger.sync(self._state, limits)
        key = (self.revision, outside_tokens, limits, id(self._state.memo), len(self._state.memo))
        if self._view is None or self._view[0] != key:  # unchanged since the last call: the same view, O(1)
            view = self._views.build(self._state, self._ledger, limits, outside_tokens)
            self._view = (key, strip_view(view) if self._extras else view)  # no block extras reach a provider
        return self._view[1]

    def tokens_of(self, message: BaseMessage) -> int:
        """What one message costs with the counter in use (its chars without a token budget)."""
        self._ledger.sync(self._state, self._state.settings.resolved())
        return self._ledger.token_count(message)

    @property
    def graph(self) -> CompiledStateGraph:
        """The compiled resize graph for this session's handlers and overrides."""
        return self.handlers.graph

    def _mode_graph(self) -> CompiledStateGraph:
        """The graph a resize of this session runs (only the nodes its mode can visit)."""
        return self.handlers.runner(self._state.settings.resolved(), sync=True)

    # -- a turn --------------------------------------------------------------------------
    def append_message(self, message: MessageInput) -> Self:
        """Append a message to the full history and the window; O(size of the message).

        Raises:
            MessageError: the message is malformed or its id is already in the history.
        """
        message = check_storable(to_message(message))
        state = self._state
        self._ledger.sync(state, state.settings.resolved())
        self._ledger.check_new(message, state.id)
        role = self._ledger.add(message, len(state.full_chat_history))
        state.full_chat_history.append(message)
        state.current_chat_history.append(message)
        self.arrived_at[message.id or ""] = utc_now()
        self._extras = self._extras or has_extras(message)
        if role == "assistant" and not getattr(message, "tool_calls", None):
            state.turns += 1  # a reply ends a turn; a tool call is a step inside it
        self.revision += 1
        return self

    def __contains__(self, message: object) -> bool:
        """Whether a message (by id) is in the full history."""
        return isinstance(message, BaseMessage) and self._ledger.index_of(message) is not None

    def judge_resize(self, force: Force = False) -> Decision | None:
        """The policy's decision for the current window (``force`` overrides it)."""
        return drive(self._judge(force))

    async def async_judge_resize(self, force: Force = False) -> Decision | None:
        """Async twin of :meth:`judge_resize`."""
        return await adrive(self._judge(force))

    def _judge(self, force: Force) -> Flow[Decision | None]:
        state = self._state
        limits = state.settings.resolved()
        self._ledger.sync(state, limits)
        return judge_state(force, self.handlers.policy, state, self._ledger.totals, self._ledger.fixed_tokens(state, limits))

    def resize(self, force: Force = False) -> list[BaseMessage]:
        """Run the resize graph; returns the new window.

        From sync code the graph runs synchronously (``graph.invoke``, sync nodes, the model's
        ``invoke``): no event loop, no worker thread, also inside a running loop (Jupyter).

        Raises:
            UnknownResizeTypeError: (a ``KeyError``) the decided type has no route.
            MemoUpdateError: the memo could not fold messages; progress is kept.
        """
        with self._one_resize():
            state, context = self._run_context(force)
            with self._traced_failure(state, context, force):
                outcome = run_resize_sync(self.handlers.runner(state.settings.resolved(), sync=True), state, context)
            return self._commit(state, context, outcome, force)

    async def async_resize(self, force: Force = False) -> list[BaseMessage]:
        """Async twin of :meth:`resize`."""
        with self._one_resize():
            state, context = self._run_context(force)
            with self._traced_failure(state, context, force):
                outcome = await run_resize(self.handlers.runner(state.settings.resolved(), sync=False), state, context)
            return self._commit(state, context, outcome, force)

    @contextlib.contextmanager
    def _one_resize(self) -> Iterator[None]:
        if self._resizing:
            raise SessionGraphError(f"session {self.id} is already resizing; await that resize before starting another.")
        self._resizing = True
        try:
            yield
        finally:
            self._resizing = False

    def _run_context(self, force: Force) -> tuple[SessionState, ResizeContext]:
        state = self._state
        limits = state.settings.resolved()
        self._ledger.sync(state, limits)
        recorder = TraceRecorder()
        return state, recorder.instrument(self.handlers.context(force, state, self._ledger, limits))

    @contextlib.contextmanager
    def _traced_failure(self, state: SessionState, context: ResizeContext, force: Force) -> Iterator[None]:
        """A run that raises changes nothing; its trace record says what failed where."""
        before = self._ledger.totals
        try:
            yield
        except BaseException as error:
            record = context.trace.record(self.trace.next_seq, state, before, before, None, error, force not in (False, None))
            if record is not None:
                self.trace.add(record)
            raise

    def _commit(self, state: SessionState, context: ResizeContext, outcome: ResizeOutcome, force: Force) -> list[BaseMessage]:
        if outcome.state is None or outcome.decision is None:
            return state.current_chat_history
        before = self._ledger.totals
        old_window = self._state.current_chat_history
        default_route = outcome.decision["type"] in ("lite", "deep") and outcome.decision["type"] not in self.handlers.resize
        if not outcome.full_replaced and default_route and self._ledger.adopt_suffix(old_window, outcome.state.current_chat_history):
            self._state = outcome.state  # the window lost only its oldest messages: totals updated in O(dropped)
            self.revision += 1
        else:
            self._install(outcome.state, reindex=outcome.full_replaced)
        self.trace.add(context.trace.record(self.trace.next_seq, state, before, self._ledger.totals, outcome, outcome.error,  # type: ignore[arg-type]
                                            force not in (False, None)))
        if outcome.error is not None:
            raise outcome.error
        return self._state.current_chat_history

    def _trim_archived(self) -> None:
        """``session.memory.trim_window``: archived messages leave the window (the system prompt stays)."""
        state, index_of = self._state, self._ledger.index_of
        system = system_prompt(state)
        kept = [m for m in state.current_chat_history
                if m is system or (position := index_of(m)) is None or position >= state.archived_through]
        if len(kept) != len(state.current_chat_history):
            self._install(dataclasses.replace(state, current_chat_history=kept), reindex=False)

    def _install(self, state: SessionState, *, reindex: bool = True) -> None:
        """Adopt a state: rebuild what is derived from it (index, sizes, window totals).

        Measures of messages the new state shares with the old one are kept (a reload that
        only adds messages costs O(what it adds) in measuring, O(history) in indexing).
        """
        previous = getattr(self, "_ledger", None)
        if previous is None:
            ledger = Ledger(state)
        elif reindex:
            ledger = Ledger(state, previous)
        else:
            ledger = previous
            ledger.rebuild(state, reindex=False)
        ledger.sync(state, state.settings.resolved())
        self._ledger = ledger
        self._state = state
        window = state.current_chat_history
        self._extras = any(has_extras(m) for m in window) or bool(state.full_chat_history and has_extras(state.full_chat_history[0]))
        self.revision += 1

    # -- lifecycle -----------------------------------------------------------------------
    def restore(self, state: SessionState) -> Self:
        """Adopt a whole state (what stores and imports use); derived accounting is rebuilt."""
        self._install(state)
        return self

    def clear(self) -> Self:
        """Start the conversation over: both histories, memo and counters are emptied.

        Settings, handlers and metadata stay. A SessionManager's next ``save`` replaces what
        its store holds for this session (the JSONL store keeps the old lines behind a reset
        marker).
        """
        state = self._state
        self._install(SessionState(id=state.id, full_chat_history=[], current_chat_history=[], memo={}, settings=state.settings,
                                   usage=state.usage, archives=state.archives))  # archive indices never go back
        self.trace.clear()
        self.cleared = True
        return self

    def touch(self) -> Self:
        """Mark the session changed, so the next ``SessionManager.save`` writes it (after metadata edits)."""
        self.revision += 1
        return self

    def get_history(self, max_messages: int | None = None, *, compat: str | None = None) -> list[dict[str, Any]]:
        """The newest window messages as OpenAI-style dicts for an LLM (tool fields kept).

        At most ``max_messages`` (default 50), opening on a user turn when the slice holds one,
        cut so that no tool result loses its call; a tool call with no result is answered by a
        synthetic "cancelled" result (as in ``view()``); ``reasoning_content`` is kept.

        With ``compat="nanobot"`` (or ``"nanobot-0.1"``, ``"-0.2"``, ``"-0.3"``): exactly what
        nanobot's own ``get_history(max_messages)`` returns for this session's records (the
        version the session was imported from, else 0.3.x; ``max_messages`` None for that
        version's default), from nanobot's archive watermark on (see
        :mod:`session_graph.interop.nanobot`).
        """
        if compat is not None:
            meta = self.metadata.get("nanobot")
            return session_history(self.full_chat_history, self.arrived_at, meta if isinstance(meta, dict) else {},
                                   max_messages, compat)
        limit = 50 if max_messages is None else max_messages
        window = answered(list(self._state.current_chat_history))
        first = max(0, len(window) - max(limit, 0))
        user = next((index for index in range(first, len(window)) if role_of(window[index]) == "user"), None)
        if user is not None:
            first = user
        while first < len(window) and role_of(window[first]) == "tool":  # its call is outside: skip it
            first += 1
        chosen = window[first:]
        history = convert_to_openai_messages(chosen)
        for message, entry in zip(chosen, history, strict=True):  # type: ignore[arg-type]
            reasoning = message.additional_kwargs.get("reasoning_content")
            if reasoning is not None:
                entry["reasoning_content"] = reasoning
        return history  # type: ignore[return-value]

    def __repr__(self) -> str:
        totals = self._ledger.totals
        return (
            f"Session(id={self.id!r}, messages={len(self.full_chat_history)}, window={totals.count} msgs/"
            f"{totals.chars} chars, turns={self.turns}, memo_keys={sorted(self.memo_for_model)})"
        )
