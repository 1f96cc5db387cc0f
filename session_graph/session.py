"""Session: the facade with the spec's API over the state and the resize graph.

A turn costs O(size of the new message): ``append_message`` normalises it once, measures
it once and updates running totals; ``judge_resize`` reads those totals. ``resize`` runs
the LangGraph resize graph on the state and commits its result in one step, so a failure
anywhere leaves the session as it was (a memo failure keeps what the memo folded, see
``MemoUpdateError``). Sync methods work inside a running event loop too.

The state, a turn, a resize and the view are defined here. Each other cohesive group (export,
search, display, parts, commit, configuration) is a set of functions in its concept's package,
their first parameter the session typed by that package's Protocol, taken as methods by name
(``commit = session_commit.commit``): see ARCHITECTURE.md, "The facade".
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self

from langchain_core.messages import BaseMessage
from langchain_core.runnables import Runnable
from langgraph.graph.state import CompiledStateGraph

from session_graph._base.flow import adrive
from session_graph._base.ids import new_id
from session_graph.accounting.counters import SessionCounter
from session_graph.accounting.window import WindowTotals
from session_graph.commit import session_commit
from session_graph.compression.context import memo_for_model
from session_graph.display import session_display
from session_graph.errors import ConfigurationError
from session_graph.interop import session_export
from session_graph.memory import session_parts
from session_graph.memory.config import MemoryConfig
from session_graph.memory.parts import has_extras, strip_view
from session_graph.messages import MessageInput, storable
from session_graph.resize import session_config
from session_graph.resize.arrivals import ArrivalsField
from session_graph.resize.handlers import Handlers
from session_graph.resize.ledger import Ledger
from session_graph.resize.policy import Decision, PolicyHandler
from session_graph.resize.run import ResizeEvent
from session_graph.resize.session_run import Force, SessionCore
from session_graph.resize.state import (
    AttachmentSummaryHandler,
    MemoUpdateHandler,
    ResizeHandler,
    SessionState,
    SummaryHandler,
)
from session_graph.resize.trace import ResizeTrace
from session_graph.resize.view import SessionView
from session_graph.retrieval import session_search
from session_graph.settings import SessionSettings

__all__ = ["Session"]


class Session:
    """A chat session: full history, current window, memo, and the policy that resizes.

    Args:
        id: the session id; a uuid4 hex when not given.
        settings: a ``SessionSettings`` or a dict (nested or dotted keys under ``session.``).
        policy_handler: ``(full, current, settings) -> None | str | dict``, sync or async.
        resize_handlers: ``{type: (full, current, memo, settings) -> (full, current, memo)}``.
        attachment_summary_handler: ``(message) -> list[dict]``.
        memo_update_handler: ``(memo, messages, attachments, settings) -> dict``.
        model: a langchain-core chat model, or any chat Runnable (``model.with_retry()``,
            ``model.with_fallbacks([...])``), or a name ``init_chat_model`` accepts
            (``"openai:gpt-4o-mini"``; needs the ``agents`` extra), that updates the memo in memo
            mode and the summary in summary mode (explicit handlers take precedence).
        summary_handler: ``(summary, messages, settings) -> str``, for summary mode.
        memory: a ``MemoryConfig``: where ``commit()`` writes long-term memories, and whose they are.
        token_counter: your own token counter (see ``set_token_counter``); None: the settings'.

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
        model: Runnable | str | None = None,
        summary_handler: SummaryHandler | None = None,
        memory: MemoryConfig | None = None,
        token_counter: Any = None,
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
        self.handlers = Handlers(policy=policy_handler, resize_handlers=resize_handlers, model=model,
                                 attachment_summary=attachment_summary_handler, memo_update=memo_update_handler,
                                 summary=summary_handler)
        self._commit_overrides: dict[str, Any] = {}  # commit step -> replacement (override_commit_node)
        self.metadata: dict[str, Any] = {}
        self.cleared = False  # set by clear(); the next save replaces what the store holds
        state = SessionState(id=id or new_id(), full_chat_history=[], current_chat_history=[], memo={},
                             settings=SessionSettings(settings))
        self._core = SessionCore(state, has_extras=has_extras, strip_view=strip_view)  # + ledger, trace, revision, view cache
        if token_counter is not None:
            self.set_token_counter(token_counter)

    # -- state, as the spec names it (owned by the core, resize/session_run.py) -----------
    @property
    def _state(self) -> SessionState:
        return self._core.state

    @property
    def _ledger(self) -> Ledger:
        return self._core.ledger

    @property
    def trace(self) -> ResizeTrace:
        """One record per resize: route, times, effect, cost (see ``session_graph.resize.trace``)."""
        return self._core.trace

    @property
    def revision(self) -> int:
        """Bumps on every change a store must see (append, resize, load, clear; memo, settings, metadata edited in place)."""
        return self._core.seen(self.metadata, check_metadata=True)

    @revision.setter
    def revision(self, value: int) -> None:
        self._core.revision = value

    @property
    def id(self) -> str:
        """The session id (a store's key)."""
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
        """The memo: structured memory (``summary`` in summary mode; ``last_resize`` records the last resize)."""
        return self._state.memo

    @property
    def settings(self) -> SessionSettings:
        """The session's settings (``session.settings.resolved()`` gives the effective limits)."""
        return self._state.settings

    @property
    def turns(self) -> int:
        """Assistant replies so far (a tool-calling step does not end a turn)."""
        return self._state.turns

    @property
    def last_resize_turn(self) -> int:
        """The turn of the last successful resize (0: none yet)."""
        return self._state.last_resize_turn

    @property
    def memo_cursor(self) -> int:
        """Index in the full history of the first message the memo has not folded yet."""
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
    set_settings = session_config.set_settings  # resize/session_config.py, as the plug points below
    configure = session_config.configure

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

    # -- plug points: resize/session_config.py ---------------------------------------------
    set_policy_handler = session_config.set_policy_handler
    set_resize_handlers = session_config.set_resize_handlers
    set_attachment_summary_handler = session_config.set_attachment_summary_handler
    set_memo_update_handler = session_config.set_memo_update_handler
    set_summary_handler = session_config.set_summary_handler
    override_node = session_config.override_node

    @property
    def model(self) -> Runnable | None:
        """The chat model behind the default memo and summary updates."""
        return self.handlers.model

    # -- what the model sees -------------------------------------------------------------
    @property
    def counter(self) -> SessionCounter:
        """The token counter in use, with this session's cost rules (``counter.name`` says which;
        ``chars`` without a token budget). Callable on a list of messages, so
        ``trim_messages(messages, token_counter=session.counter, ...)`` counts as the session does."""
        return self._core.counter()

    def set_token_counter(self, counter: Any) -> Self:
        """Count tokens with your own counter (None: back to the settings' encoding or model).

        ``counter``: a function ``str -> int`` or ``list[BaseMessage] -> int``, a tokenizer with
        ``encode`` (Hugging Face, tiktoken), a LangChain chat model (its
        ``get_num_tokens_from_messages``), or an object with ``count_tokens`` (see
        ``session_graph.accounting.counters.as_token_counter``). The window is recounted with it. It is
        code, not saved with the session: a store's ``session_factory`` gives it again on load.
        """
        self._core.set_token_counter(counter)
        return self

    def view(self, *, outside_tokens: int = 0) -> SessionView:
        """Exactly the messages to send to a model: system prompt, summary or memo, window.

        Under ``session.limit.tokens`` its ``tokens`` never exceed the budget.
        ``outside_tokens``: what the request spends beyond the view (an agent's own system
        prompt); it comes off the budget (see ``tokens_of``).
        """
        if isinstance(outside_tokens, bool) or not isinstance(outside_tokens, int) or outside_tokens < 0:
            raise ConfigurationError(f"outside_tokens must be a whole number >= 0, got {outside_tokens!r}.")
        return self._core.view(outside_tokens)

    def tokens_of(self, message: BaseMessage) -> int:
        """What one message costs with the counter in use (its chars without a token budget)."""
        return self._core.tokens_of(message)

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
        message = storable(message)
        self._core.append(message)  # stamps its arrival too
        return self

    def __contains__(self, message: object) -> bool:
        """Whether a message (by id) is in the full history."""
        return isinstance(message, BaseMessage) and self._core.ledger.holds(message.id or "")

    def judge_resize(self, force: Force = False) -> Decision | None:
        """The policy's decision for the current window (``force`` overrides it)."""
        return self._core.judge_sync(force, self.handlers.policy)

    async def async_judge_resize(self, force: Force = False) -> Decision | None:
        """Async twin of :meth:`judge_resize`."""
        return await adrive(self._core.judge(force, self.handlers.policy))

    def resize(self, force: Force = False) -> list[BaseMessage]:
        """Run the resize graph; returns the new window.

        From sync code the graph runs synchronously (``graph.invoke``, sync nodes, the model's
        ``invoke``): no event loop, no worker thread, also inside a running loop (Jupyter).

        Raises:
            UnknownResizeTypeError: (a ``KeyError``) the decided type has no route.
            MemoUpdateError: the memo could not fold messages; progress is kept.
        """
        return self._core.resize_sync(self.handlers, force)

    async def async_resize(self, force: Force = False) -> list[BaseMessage]:
        """Async twin of :meth:`resize`."""
        return await self._core.resize(self.handlers, force)

    def _trim_archived(self) -> None:
        self._core.trim_archived()  # session.memory.trim_window: archived messages leave the window

    # -- lifecycle -----------------------------------------------------------------------
    def restore(self, state: SessionState) -> Self:
        """Adopt a whole state (what stores and imports use); derived accounting is rebuilt."""
        self._core.install(state)
        return self

    def clear(self) -> Self:
        """Start the conversation over: both histories, memo and counters are emptied.

        Settings, handlers and metadata stay. A SessionManager's next ``save`` replaces what
        its store holds for this session (the JSONL store keeps the old lines behind a reset
        marker).
        """
        state = self._state
        self._core.install(SessionState(id=state.id, full_chat_history=[], current_chat_history=[], memo={}, settings=state.settings,
                                   usage=state.usage, archives=state.archives))  # archive indices never go back
        self.trace.clear()
        self.cleared = True
        return self

    def touch(self) -> Self:
        """Mark the session changed, so the next ``SessionManager.save`` writes it (after metadata edits)."""
        self.revision += 1
        return self

    # -- search: retrieval/session_search.py ---------------------------------------------
    search = session_search.search
    asearch = session_search.asearch

    # -- export and history in other shapes: interop/session_export.py --------------------
    to_dict = session_export.to_dict
    to_json = session_export.to_json
    to_yaml = session_export.to_yaml
    load_dict = session_export.load_dict
    load_json = session_export.load_json
    load_yaml = session_export.load_yaml
    get_history = session_export.get_history
    arrived_at = ArrivalsField()  # message id -> UTC arrival time, kept by stores (resize/arrivals.py; assigning replaces them)

    @classmethod
    def from_json(cls, value: str, **kwargs: Any) -> Self:
        """A new session from a JSON document (handlers and model as keyword arguments)."""
        return cls(**kwargs).load_json(value)

    @classmethod
    def from_yaml(cls, value: str, **kwargs: Any) -> Self:
        """A new session from a YAML document (handlers and model as keyword arguments)."""
        return cls(**kwargs).load_yaml(value)

    # -- display: display/session_display.py (drawings, plots, the Jupyter card) -----------
    draw = session_display.draw
    draw_mermaid = session_display.draw_mermaid
    plot = session_display.plot
    plot_costs = session_display.plot_costs
    _repr_html_ = session_display._repr_html_

    # -- OpenViking's message API: memory/session_parts.py --------------------------------
    add_message = session_parts.add_message
    update_tool_part = session_parts.update_tool_part
    parts = session_parts.parts
    used = session_parts.used

    # -- long-term memory: commit/session_commit.py ---------------------------------------
    commit = session_commit.commit
    acommit = session_commit.acommit
    override_commit_node = session_commit.override_commit_node
    draw_commit = session_commit.draw_commit

    def __repr__(self) -> str:
        totals = self._ledger.totals
        return (
            f"Session(id={self.id!r}, messages={len(self.full_chat_history)}, window={totals.count} msgs/"
            f"{totals.chars} chars, turns={self.turns}, memo_keys={sorted(self.memo_for_model)})"
        )
