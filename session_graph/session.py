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

from langchain_core.messages import BaseMessage, ToolMessage, convert_to_openai_messages

from session_graph._base.ids import new_id
from session_graph.commit import commit_result, run_commit, run_commit_async
from session_graph.commit.graph import build_commit_graph
from session_graph.commit.session_commit import (
    Checkpoint,
    adopt_commit,
    commit_context,
    draw_commit_graph,
    with_commit_override,
)
from session_graph.display.cards import session_card
from session_graph.display.plots import plot_costs, plot_window
from session_graph.display.session_display import draw_resize_graph
from session_graph.display.viz import GraphDrawing
from session_graph.errors import ConfigurationError
from session_graph.interop import export
from session_graph.interop.nanobot import session_history
from session_graph.memory.parts import Part
from session_graph.memory.session_parts import part_messages, parts_in_history, tool_result
from session_graph.memory.usage import usage_records
from session_graph.messages import role_of
from session_graph.resize.state import (
    SessionState,
)
from session_graph.resize.view import answered
from session_graph.session_base import SessionBase

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["Session"]


class Session(SessionBase):
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
        self._core.install(state)
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
            self._core.trim_archived()

    def __repr__(self) -> str:
        totals = self._ledger.totals
        return (
            f"Session(id={self.id!r}, messages={len(self.full_chat_history)}, window={totals.count} msgs/"
            f"{totals.chars} chars, turns={self.turns}, memo_keys={sorted(self.memo_for_model)})"
        )
