"""The base of the facade: a session's live conversation, as the spec names it.

``SessionBase`` owns a session's fields (the core of ``resize/session_run.py``, the handlers,
``memory``, ``metadata``, ``arrived_at``...) and the spec's API over the conversation itself:
the state properties, settings, handlers, the view, a turn (``append_message``, ``judge_resize``)
and ``resize``, each a documented thin delegation. ``Session`` (``session.py``) is the class to
use: it adds lifecycle, search, export, display, OpenViking's parts and the commit. Split from
``session.py`` only to keep each file short; the two are one facade layer.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Literal, Self

from langchain_core.messages import BaseMessage
from langchain_core.runnables import Runnable
from langgraph.graph.state import CompiledStateGraph

from session_graph._base.flow import adrive, drive
from session_graph._base.ids import new_id, utc_now
from session_graph.accounting.counters import SessionCounter
from session_graph.accounting.window import WindowTotals
from session_graph.compression.context import memo_for_model
from session_graph.errors import ConfigurationError
from session_graph.memory.config import MemoryConfig
from session_graph.memory.parts import has_extras, strip_view
from session_graph.messages import MessageInput, check_storable, to_message
from session_graph.resize.handlers import Handlers, checked_callable
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
from session_graph.settings import SessionSettings

if TYPE_CHECKING:
    pass

__all__ = ["SessionBase"]


class SessionBase:
    """A session's state and the spec's API over the conversation (``Session`` is the class to use)."""

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
        self.handlers = Handlers(
            policy=policy_handler,
            resize_handlers=resize_handlers,
            attachment_summary=attachment_summary_handler,
            memo_update=memo_update_handler,
            summary=summary_handler,
            model=model,
        )
        self._commit_overrides: dict[str, Any] = {}  # commit step -> replacement (override_commit_node)
        self.metadata: dict[str, Any] = {}
        self.arrived_at: dict[str, str] = {}  # message id -> UTC arrival time (kept by stores)
        self.cleared = False  # set by clear(); the next save replaces what the store holds
        self._core = SessionCore(  # the state, its ledger, trace, revision and view cache (resize/session_run.py)
            SessionState(
                id=id or new_id(),
                full_chat_history=[],
                current_chat_history=[],
                memo={},
                settings=SessionSettings(settings),
            ),
            has_extras=has_extras,
            strip_view=strip_view,
        )
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
        """Bumps on every change a store must see (append, resize, load, clear)."""
        return self._core.revision

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
        """Set how attachments are summarised for the memo, ``(message) -> list[dict]`` (None: the built-in summary)."""
        self.handlers.attachment_summary = checked_callable(attachment_summary_handler, "attachment summary handler")
        return self

    def set_memo_update_handler(self, memo_update_handler: MemoUpdateHandler | None) -> Self:
        """Set the memo update, ``(memo, messages, attachments, settings) -> dict`` (None: the model's, if any)."""
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
        message = check_storable(to_message(message))
        self._core.append(message)
        self.arrived_at[message.id or ""] = utc_now()
        return self

    def __contains__(self, message: object) -> bool:
        """Whether a message (by id) is in the full history."""
        return isinstance(message, BaseMessage) and self._ledger.index_of(message) is not None

    def judge_resize(self, force: Force = False) -> Decision | None:
        """The policy's decision for the current window (``force`` overrides it)."""
        return drive(self._core.judge(force, self.handlers.policy))

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
