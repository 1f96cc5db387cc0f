"""Session: the facade with the spec's API over the state and the resize graph.

A turn costs O(size of the new message): ``append_message`` normalises it once, measures
it once and updates running totals; ``judge_resize`` reads those totals. ``resize`` runs
the LangGraph resize graph on the state and commits its result in one step, so a failure
anywhere leaves the session as it was (a memo failure keeps what the memo folded, see
``MemoUpdateError``). Sync methods work inside a running event loop too.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal, Self

from langchain_core.messages import BaseMessage, ToolMessage
from langchain_core.runnables import Runnable
from langgraph.graph.state import CompiledStateGraph

from session_graph._base.flow import adrive, drive
from session_graph._base.ids import new_id, utc_now
from session_graph.accounting.counters import SessionCounter
from session_graph.accounting.window import WindowTotals
from session_graph.commit import commit_result, run_commit, run_commit_async
from session_graph.commit.graph import build_commit_graph
from session_graph.commit.session_commit import (
    Checkpoint,
    adopt_commit,
    commit_context,
    draw_commit_graph,
    with_commit_override,
)
from session_graph.compression.context import memo_for_model
from session_graph.display.cards import session_card
from session_graph.display.plots import plot_costs, plot_window
from session_graph.display.session_display import draw_resize_graph
from session_graph.display.viz import GraphDrawing
from session_graph.errors import ConfigurationError
from session_graph.interop import export
from session_graph.interop.nanobot import session_history
from session_graph.memory.config import MemoryConfig
from session_graph.memory.parts import Part, has_extras, strip_view
from session_graph.memory.session_parts import part_messages, parts_in_history, tool_result
from session_graph.memory.usage import usage_records
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
from session_graph.resize.view import SessionView, recent_history
from session_graph.settings import SessionSettings

if TYPE_CHECKING:
    from matplotlib.figure import Figure

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

    def _install(self, state: SessionState, *, reindex: bool = True) -> None:
        self._core.install(state, reindex=reindex)  # adopt a state, rebuild what derives from it

    def _trim_archived(self) -> None:
        self._core.trim_archived()  # session.memory.trim_window: archived messages leave the window

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
        self._core.install(SessionState(id=state.id, full_chat_history=[], current_chat_history=[], memo={}, settings=state.settings,
                                   usage=state.usage, archives=state.archives))  # archive indices never go back
        self.trace.clear()
        self.cleared = True
        return self

    def touch(self) -> Self:
        """Mark the session changed, so the next ``SessionManager.save`` writes it (after metadata edits)."""
        self.revision += 1
        return self

    def search(self, query: str, k: int = 10, *, mode: str = "ranked", options: Any = None, **settings: Any) -> list[Any]:
        """The ``k`` messages of the whole history (window, evicted, archived) that best match ``query``.

        Ranked by BM25 over stemmed, CJK-aware terms (``session_graph.retrieval``); a session a
        ``SessionManager`` loaded lazily asks the store's index for the part still in the store
        instead of reading it. ``mode="substring"``: the messages containing ``query``
        (case-insensitive), oldest first. ``settings`` (``around``, ``since``, ``until``,
        ``dense``, ``reranker``...) or ``options`` are a ``retrieval.search.SearchOptions``.
        Returns ``SearchHit``s (``key`` is the session id, ``seq`` the position in the history).
        """
        from session_graph.retrieval.messages import session_search, substring_search
        from session_graph.retrieval.search import make_options

        if mode == "substring":
            return substring_search(self, query, k)
        if mode != "ranked":
            raise ConfigurationError(f"mode must be 'ranked' or 'substring', got {mode!r}.")
        return session_search(self, query, k, make_options(options, settings))

    async def asearch(self, query: str, k: int = 10, *, mode: str = "ranked", options: Any = None, **settings: Any) -> list[Any]:
        """Async twin of ``search`` (run in a worker thread: a long history or a store's index
        never holds the event loop)."""
        import asyncio

        return await asyncio.to_thread(self.search, query, k, mode=mode, options=options, **settings)

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
        return recent_history(self._state.current_chat_history, 50 if max_messages is None else max_messages)

    # -- export: the spec's names; the format lives in interop/export.py -----------------
    def to_dict(self) -> dict[str, Any]:
        """The session as a plain dict (what to_json and to_yaml write)."""
        return export.session_document(self._state, self.trace)

    def to_json(self) -> str:
        """The session as JSON text (``to_dict()``, ASCII-safe); ``Session.from_json`` loads it back."""
        return export.to_json(self.to_dict())

    def to_yaml(self) -> str:
        """The session as YAML text (``to_dict()``); ``Session.from_yaml`` loads it back."""
        return export.to_yaml(self.to_dict())

    def load_json(self, value: str) -> Self:
        """Replace this session's state with a JSON document; nothing changes on error."""
        return self.load_dict(export.parse_json(value))

    def load_yaml(self, value: str) -> Self:
        """Replace this session's state with a YAML document; nothing changes on error."""
        return self.load_dict(export.parse_yaml(value))

    def load_dict(self, data: Any) -> Self:
        """Replace this session's state with a parsed document; nothing changes on error."""
        state, trace = export.read_document(data, keep_id=self.id)
        self._install(state)
        self.trace.replace(trace)
        return self

    @classmethod
    def from_json(cls, value: str, **kwargs: Any) -> Self:
        """A new session from a JSON document (handlers and model as keyword arguments)."""
        return cls(**kwargs).load_json(value)

    @classmethod
    def from_yaml(cls, value: str, **kwargs: Any) -> Self:
        """A new session from a YAML document (handlers and model as keyword arguments)."""
        return cls(**kwargs).load_yaml(value)

    # -- display: drawings, plots and the card live in display/, handed what they draw ---
    def draw_mermaid(self) -> str:
        """Mermaid text of the resize graph, with the policy's labels on the edges."""
        return self.graph.get_graph().draw_mermaid()

    def draw(self, *, format: Literal["svg", "mermaid"] = "svg", highlight: Any = None) -> GraphDrawing:
        """The resize graph, drawn offline.

        Args:
            format: ``"svg"`` (displayed in every notebook frontend, no network) or
                ``"mermaid"`` (displayed as a Mermaid block; ``.mermaid`` has the text either way).
            highlight: a trace record (``session.trace[-1]``) or node names: that route is
                drawn over the graph the session's mode runs (a lite session's has no memo
                or summary nodes), each node with its visits and time. Without it the whole
                policy is drawn.
        """
        return draw_resize_graph(self.graph if highlight is None else self._mode_graph(), format=format, highlight=highlight)

    def plot(self, *, ax: Any = None, unit: Literal["auto", "tokens", "chars"] = "auto") -> Figure:
        """Window size per turn against the limit, resizes marked by type, memo or summary size
        on a second axis. Needs matplotlib (``pip install "session_graph[viz]"``).

        Args:
            ax: a matplotlib Axes to draw into (default: a new Figure).
            unit: ``"tokens"``, ``"chars"``, or ``"auto"`` (tokens under a token budget).

        Returns:
            The Figure: shown inline in Jupyter, ``fig.savefig("window.png")`` (or ``.svg``) to save.
        """
        return plot_window(self, ax=ax, unit=unit)

    def plot_costs(self) -> Figure:
        """Model calls and tokens sent per resize, and their running totals. Needs matplotlib.

        Returns:
            The Figure (shown inline in Jupyter; ``savefig`` to save).
        """
        return plot_costs(self)

    def _repr_html_(self) -> str:
        """The Jupyter card: id, mode, limits, window against history, memo, last resizes."""
        return session_card(self)

    # -- OpenViking's message API: parts live in memory/parts.py and memory/session_parts.py --
    def add_message(self, role: str, parts: Sequence[Any], *, id: str | None = None) -> BaseMessage:
        """Append a user or assistant message made of parts; returns it (finished tools are appended as ToolMessages).

        Raises:
            MessageError: an unknown role or a malformed part; nothing is appended.
        """
        messages = part_messages(self._state.full_chat_history, role, parts, id=id or f"msg_{new_id()}")
        for message in messages:
            self.append_message(message)
        return messages[0]

    def update_tool_part(self, message_id: str, tool_id: str, output: str, status: str = "completed") -> ToolMessage:
        """Record a tool's result: appends one ToolMessage (O(1); nothing already stored is rewritten).

        Raises:
            MessageError: no such message or tool call, a status other than ``completed`` or
                ``error``, the call already has its result, or the conversation has moved on past
                the call (its result would be separated from it).
        """
        result = tool_result(self._state.full_chat_history, message_id, tool_id, output, status)
        self.append_message(result)
        return result

    def parts(self, message: BaseMessage) -> list[Part | dict[str, Any]]:
        """The parts of any message; an assistant message's tool parts carry their results from the history."""
        return parts_in_history(self._state.full_chat_history, message)

    def used(self, contexts: Sequence[str] | None = None, skill: Mapping[str, Any] | None = None) -> Self:
        """Record that contexts (URIs) or a skill ``{uri, input, output, success}`` were used; saved with the session.

        Raises:
            MessageError: a bad argument; nothing is recorded.
        """
        history = self._state.full_chat_history
        records = usage_records(contexts, skill, history[-1].id if history else None)
        self._state.usage = (*self._state.usage, *records)
        self.revision += 1
        return self

    # -- long-term memory: the commit graph lives in commit/ -----------------------------
    def override_commit_node(self, name: str, fn: Callable[..., Any]) -> Self:
        """Replace one commit step (``claim`` .. ``finalize``) with ``fn(state, runtime) -> update``.

        Raises:
            ConfigurationError: ``name`` is not a commit step, or ``fn`` is not callable.
        """
        self._commit_overrides = with_commit_override(self._commit_overrides, name, fn)
        return self

    def draw_commit(self, *, format: Literal["svg", "mermaid"] = "svg") -> GraphDrawing:
        """The commit graph, drawn offline (as ``draw()`` draws the resize graph)."""
        return draw_commit_graph(self._commit_overrides, format=format)

    def commit(self, *, dry_run: bool = False, wait: bool = True, checkpoint: Checkpoint | None = None) -> dict[str, Any]:
        """Archive the messages no commit archived yet, summarise them and fold long-term
        memories from them into ``memory``'s store, without duplicates.

        Args:
            dry_run: return the plan (``result["plan"]``) and write nothing.
            wait: False: archive only (status ``archived``); the next ``commit()`` does the rest.
            checkpoint: called with the session state after each step that changed it (a
                ``SessionManager`` saves it there; see ``SessionManager.commit``).

        Returns:
            ``{"status": "committed" | "skipped" | "partial" | "archived" | "dry_run", "archived",
            "archive", "memories_extracted", "active_count_updated", "memories": {"created",
            "updated", "merged", "skipped"}, "errors", "plan", "abstract"}``. ``partial``: a model
            step failed; the archive stays pending and the next ``commit()`` resumes it.

        Raises:
            ConfigurationError: the session has no ``memory=MemoryConfig(...)``.
        """
        ctx = self._commit_context(dry_run, wait, checkpoint)
        final = run_commit(build_commit_graph(self._commit_overrides, sync=True), self._state, ctx)
        if not dry_run:
            self._adopt_commit(final.session)
        return commit_result(final, ctx)

    async def acommit(self, *, dry_run: bool = False, wait: bool = True, checkpoint: Checkpoint | None = None) -> dict[str, Any]:
        """Async twin of :meth:`commit` (model calls through ``ainvoke``)."""
        ctx = self._commit_context(dry_run, wait, checkpoint)
        final = await run_commit_async(build_commit_graph(self._commit_overrides, sync=False), self._state, ctx)
        if not dry_run:
            self._adopt_commit(final.session)
        return commit_result(final, ctx)

    def _commit_context(self, dry_run: bool, wait: bool, checkpoint: Checkpoint | None) -> Any:
        def adopt_then(state: SessionState) -> None:
            self._adopt_commit(state)
            if checkpoint is not None:
                checkpoint(state)

        return commit_context(self.memory, self.handlers.model, self._state.settings, dry_run=dry_run, wait=wait, adopt=adopt_then)

    def _adopt_commit(self, state: SessionState) -> None:
        """Take a commit's ledger (cursor, usage, archives); messages appended meanwhile stay."""
        trim = adopt_commit(self._state, state)
        self.revision += 1
        if trim:
            self._trim_archived()

    def __repr__(self) -> str:
        totals = self._ledger.totals
        return (
            f"Session(id={self.id!r}, messages={len(self.full_chat_history)}, window={totals.count} msgs/"
            f"{totals.chars} chars, turns={self.turns}, memo_keys={sorted(self.memo_for_model)})"
        )
