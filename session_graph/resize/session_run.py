"""What a ``Session`` owns under its API, and the glue of one resize run over it.

``SessionCore`` holds the state, the ledger derived from it, the trace, the revision and the
view cache, and is the one place they change: ``install`` adopts a state (rebuilding what is
derived from it), ``append`` takes one message in O(its size), ``resize_sync``/``resize`` run the
resize graph (``run.py``) and commit its result in one step, so a failure anywhere leaves the
state as it was (a memo failure keeps what the memo folded). ``Session`` (the facade, above this
package) keeps the spec's API and its docstrings and delegates here.

Block extras a provider must not see are memory's concept (``memory/parts.py``, a package
above this one): the session hands in ``has_extras`` and ``strip_view`` instead.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
import copy
import dataclasses
import time
from typing import Any, Literal

from langchain_core.messages import BaseMessage, SystemMessage

from session_graph._base.edits import EditWatch
from session_graph._base.flow import Flow, drive
from session_graph.accounting.counters import SessionCounter, as_token_counter
from session_graph.errors import MessageError, SessionGraphError
from session_graph.resize.arrivals import Arrivals
from session_graph.resize.direct import select
from session_graph.resize.handlers import Handlers
from session_graph.resize.history import LazyHistory
from session_graph.resize.ledger import Ledger, system_prompt
from session_graph.resize.nodes.judge import judge_state
from session_graph.resize.policy import Decision, PolicyHandler, default_policy, forced_decision
from session_graph.resize.run import ResizeOutcome, run_resize, run_resize_sync
from session_graph.resize.state import ResizeContext, SessionState
from session_graph.resize.trace import ResizeTrace
from session_graph.resize.trace_recording import TraceRecorder, started
from session_graph.resize.view import SessionView
from session_graph.resize.view_builder import ViewBuilder

__all__ = ["Force", "SessionCore"]

Force = Literal["lite", "deep"] | str | bool | None


def _done(value: Any) -> Flow[Any]:
    """A flow that is already decided: ``drive`` returns ``value`` at once."""
    return value
    yield  # a generator function: never reached


def _shape(messages: list[BaseMessage]) -> list[BaseMessage]:
    """A view's list as built, message by message (a copy the caller never sees: compared with
    ``==``, identity first in a C loop, ~1 us for 500 messages; an edit of the handed-out list in
    place anywhere, at its ends or in its middle, makes the next call build the view again)."""
    return list(messages)


def _made(state: SessionState) -> tuple[int, int, Any, Any]:
    """The histories as the session made them, in O(1): their lengths and last messages (held,
    compared by identity: a last message replaced in place, or popped and another appended,
    differs; a lazy history's last is not read)."""
    full, window = state.full_chat_history, state.current_chat_history
    return (len(full), len(window), full[-1] if full and type(full) is list else None, window[-1] if window else None)


class SessionCore:
    """A session's state and everything derived from it; every change goes through its methods.

    Args:
        state: the state to adopt.
        has_extras: whether a message carries content a provider must not see.
        strip_view: a view without that content (the same view when there is none).
    """

    state: SessionState  # set by install()
    ledger: Ledger
    extras: bool  # whether the window may hold content a provider must not see
    lengths: tuple[int, int, Any, Any]  # the histories' lengths and last messages as the session made them (an edit in place differs)

    def __init__(
        self,
        state: SessionState,
        *,
        has_extras: Callable[[BaseMessage], bool],
        strip_view: Callable[[SessionView], SessionView],
    ) -> None:
        self.has_extras = has_extras
        self.strip_view = strip_view
        self.resizing = False
        self.view_cache: tuple[Any, SessionView, list[BaseMessage]] | None = None
        self.views = ViewBuilder()  # extends the last view in O(new messages) when it can
        self.trace = ResizeTrace()  # one record per resize: route, times, effect, cost (see trace.py)
        self._revision = 0  # bumps on every change a store must see (append, resize, load, clear, an edit in place)
        self.watch = EditWatch()  # the memo and settings as last seen: an edit in place moves the revision when read
        self.system_tokens: dict[tuple[str, Any], int] = {}  # tokens_of a plain system message, by text and counter
        self.block_tokens: dict[int, tuple[Any, Any, Any, int]] = {}  # ... of content blocks: by the list, a copy, the counter
        self.arrivals = Arrivals(self)  # Session.arrived_at: each appended message's stamp a number by position
        self.install(state)

    def __getstate__(self) -> dict[str, Any]:
        if isinstance(history := self.state.full_chat_history, LazyHistory):
            history.load()  # a copy's history is read whole (``LazyHistory.__reduce__``): read here first, the ledger told
        return self.__dict__

    def __setstate__(self, values: dict[str, Any]) -> None:
        """A copied session's core (``copy.deepcopy``, ``pickle``): its stamps came as the plain dict
        ``Arrivals`` copies itself to (``session.arrived_at`` copied alone), made this core's again."""
        self.__dict__.update(values)
        if not isinstance(stamps := values.get("arrivals"), Arrivals):
            self.arrivals = Arrivals(self)
            self.arrivals.stamps.update(stamps or {})

    # -- the revision ----------------------------------------------------------------------
    @property
    def revision(self) -> int:
        """Bumps on every change a store must see, an edit in place of the memo (at any depth)
        or a ``settings.set`` included (seen here, when read: ``_base/edits``)."""
        return self.seen()

    @revision.setter
    def revision(self, value: int) -> None:
        self._revision = value

    def seen(self, metadata: Any = None, *, check_metadata: bool = False) -> int:
        """The revision, moved once if the memo, the settings (or ``metadata``) changed in place."""
        state = self.state
        if _made(state) != self.lengths:
            raise MessageError(
                f"session {state.id}: its full_chat_history or current_chat_history was edited in place "
                f"({len(state.full_chat_history)} and {len(state.current_chat_history)} messages, {self.lengths[:2]} "
                "through the session, or its last message replaced); add messages with append_message, adopt a whole state with restore(): "
                "a list edit bypasses the accounting, the view and the store.")
        if self.watch.changed(state.memo, state.settings._data, metadata, check_metadata=check_metadata):
            self._revision += 1
            self.views = ViewBuilder()  # its last view may show the memo as it was
        return self._revision

    # -- what the model sees -------------------------------------------------------------
    def counter(self) -> SessionCounter:
        """The token counter in use, with the session's cost rules."""
        self.ledger.sync(self.state, self.state.settings.resolved())
        return SessionCounter(self.ledger.counter, self.ledger.rules)

    def set_token_counter(self, counter: Any) -> None:
        """Count with ``counter`` (None: the settings'); the window is recounted with it."""
        custom = as_token_counter(counter) if counter is not None else None
        self.ledger.custom = custom
        self.ledger.sync(self.state, self.state.settings.resolved())
        self.view_cache = None

    def view(self, outside_tokens: int) -> SessionView:
        """The view for ``outside_tokens`` spent beyond it; the same object while nothing changed."""
        limits = self.state.settings.resolved()
        self.ledger.sync(self.state, limits)
        memo = self.state.memo  # held, not its id() (a new memo may take a freed one's address); its summary may be edited in place
        key = (self.revision, outside_tokens, limits, memo, len(memo), memo.get("summary"))
        cached = self.view_cache
        if cached is None or cached[0] != key or cached[2] != cached[1].messages:  # unchanged: the same view
            view = self.views.build(self.state, self.ledger, limits, outside_tokens)
            view = self.strip_view(view) if self.extras else view  # no block extras reach a provider
            cached = self.view_cache = (key, view, _shape(view.messages))  # a caller that edits its list gets a new one next
        return cached[1]

    def tokens_of(self, message: BaseMessage) -> int:
        """What one message costs with the counter in use.

        A plain system message (no id, no name: an agent's own system prompt, counted on every
        model call) is counted once per text and counter; one of content blocks (a
        ``cache_control`` prompt) once per content list while it equals the copy counted.
        """
        ledger = self.ledger
        ledger.sync(self.state, self.state.settings.resolved())
        if message.id is None and type(message) is SystemMessage and not message.name:
            if not isinstance(message.content, str):
                return self._blocks_tokens(message, ledger)
            key = (message.content, ledger.counter_key)
            cached = self.system_tokens.get(key)
            if cached is None:
                if len(self.system_tokens) >= 16:
                    self.system_tokens.clear()
                cached = self.system_tokens[key] = ledger.token_count(message)
            return cached
        return ledger.token_count(message)

    def _blocks_tokens(self, message: BaseMessage, ledger: Ledger) -> int:
        """``tokens_of`` a plain system message of content blocks: held by its list (kept alive,
        so its id is not reused) beside a copy, so a block edited in place is counted again."""
        content, key = message.content, ledger.counter_key
        held = self.block_tokens.get(id(content))
        if held is not None and held[0] is content and held[2] == key and held[1] == content:
            return held[3]
        tokens = ledger.token_count(message)
        if len(self.block_tokens) >= 16:
            self.block_tokens.clear()
        self.block_tokens[id(content)] = (content, copy.deepcopy(content), key, tokens)
        return tokens

    # -- a turn --------------------------------------------------------------------------
    def append(self, message: BaseMessage) -> None:
        """Append a normalised message to both histories and stamp its arrival; O(its size)."""
        state, ledger = self.state, self.ledger
        ledger.sync(state, state.settings.resolved())
        position = len(state.full_chat_history)
        role = ledger.add(message, position, state.id)  # refuses a known id first
        if len(state.full_chat_history) != position:  # another thread appended while this one was measured (a counter's user code)
            position = ledger.moved(message, len(state.full_chat_history))
        state.full_chat_history.append(message)
        state.current_chat_history.append(message)
        arrivals = self.arrivals
        if arrivals.base + len(arrivals.micros) != position:  # the first since settled, or the history grew by other means
            arrivals.start_at(state.full_chat_history, position)
        arrivals.micros.append(time.time_ns() // 1000)  # its stamp, by position (``arrivals.py``)
        if arrivals.stamps and message.id in arrivals.stamps:
            del arrivals.stamps[message.id]  # a stamp kept from a message of this id no longer in the history
        full, window, _, _ = self.lengths
        self.lengths = (full + 1, window + 1, message if type(state.full_chat_history) is list else None, message)
        if not self.extras and type(message.content) is not str:  # a text content carries no block extras
            self.extras = self.has_extras(message)
        if role == "assistant" and not getattr(message, "tool_calls", None):
            state.turns += 1  # a reply ends a turn; a tool call is a step inside it
        self._revision += 1

    def judge(self, force: Force, policy: PolicyHandler) -> Flow[Decision | None]:
        """The policy's decision for the current window, as a flow (``drive`` or ``adrive`` it)."""
        state = self.state
        limits = state.settings.resolved()
        self.ledger.sync(state, limits)
        if not force and policy is None:  # the default policy on running totals: no flow to drive (once per turn)
            if self.ledger.quiet(state, limits):
                return _done(None)
            return _done(default_policy(self.ledger.running, state.turns, state.last_resize_turn, limits,
                                        self.ledger.fixed_tokens(state, limits)))
        return judge_state(force, policy, state, self.ledger.totals, self.ledger.fixed_tokens(state, limits))

    def judge_sync(self, force: Force, policy: PolicyHandler) -> Decision | None:
        """The policy's decision, sync: the default policy's at once (no flow is made), else the flow's, driven."""
        if not force and policy is None:
            state = self.state
            limits = state.settings.resolved()
            ledger = self.ledger
            ledger.sync(state, limits)
            if ledger.quiet(state, limits):  # the running totals under bounds worked out once: O(1), no decision to make
                return None
            return default_policy(ledger.running, state.turns, state.last_resize_turn, limits, ledger.fixed_tokens(state, limits))
        return drive(self.judge(force, policy))

    def resize_sync(self, handlers: Handlers, force: Force) -> list[BaseMessage]:
        """Run the sync resize graph and commit its result; returns the new window."""
        self._start_resize()
        try:  # plain try blocks, not context managers: this runs on every resize of an agent's turns
            run = self._prepare(handlers, force)
            if run is None:
                return self.state.current_chat_history
            state, context, decision = run
            before = self.ledger.totals
            try:
                graph = handlers.runner(state.settings.resolved(), sync=True, start=None if decision is None else decision["type"])
                outcome = run_resize_sync(graph, state, context, decision, select(graph, handlers, sync=True))
            except BaseException as error:
                self._failed(state, context, force, before, error)
                raise
            return self._commit(handlers, state, context, outcome, force)
        finally:
            self.resizing = False

    async def resize(self, handlers: Handlers, force: Force) -> list[BaseMessage]:
        """Run the async resize graph and commit its result; returns the new window."""
        self._start_resize()
        try:
            run = self._prepare(handlers, force)
            if run is None:
                return self.state.current_chat_history
            state, context, decision = run
            before = self.ledger.totals
            try:
                graph = handlers.runner(state.settings.resolved(), sync=False, start=None if decision is None else decision["type"])
                outcome = await run_resize(graph, state, context, decision, select(graph, handlers, sync=False))
            except BaseException as error:
                self._failed(state, context, force, before, error)
                raise
            return self._commit(handlers, state, context, outcome, force)
        finally:
            self.resizing = False

    def _prepare(self, handlers: Handlers, force: Force) -> tuple[SessionState, ResizeContext, Decision | None] | None:
        """What one run starts from: the state, its context and the decision made before it (None
        when nothing is to do).

        The judge decides here, before the graph, when it needs no flow: a forced type, or the
        default policy on the running totals (no policy handler, the judge node not replaced);
        the run then runs the graph compiled for that type, from START straight into its route
        (``graph.py``), and its trace records this judge visit. Otherwise the decision is None
        and the graph's judge decides.
        """
        start = started()
        decision: Decision | None = None
        if "judge" not in handlers.overrides and (force or handlers.policy is None):
            decision = forced_decision(force) if force else self.judge_sync(False, None)
            if decision is None:
                return None  # the default judge finds nothing to do: no run
        judged = started()
        state, context = self._run_context(handlers, force, start)
        if decision is not None:
            context.trace.visit("judge", judged - start, {"decision": decision})
        return state, context, decision

    def _start_resize(self) -> None:
        if self.resizing:
            raise SessionGraphError(f"session {self.state.id} is already resizing; await that resize before starting another.")
        self.resizing = True

    def _run_context(self, handlers: Handlers, force: Force, start: float) -> tuple[SessionState, ResizeContext]:
        state = self.state
        limits = state.settings.resolved()
        self.ledger.sync(state, limits)
        recorder = TraceRecorder(start)
        return state, handlers.context(force, state, self.ledger, limits, recorder)

    def _failed(self, state: SessionState, context: ResizeContext, force: Force, before: Any, error: BaseException) -> None:
        """A run that raised changes nothing; its trace record says what failed where."""
        record = context.trace.record(self.trace.next_seq, state, before, before, None, error, force not in (False, None))
        if record is not None:
            self.trace.add(record)

    def _commit(self, handlers: Handlers, state: SessionState, context: ResizeContext, outcome: ResizeOutcome,
                force: Force) -> list[BaseMessage]:
        if outcome.state is None or outcome.decision is None:
            return state.current_chat_history
        before = self.ledger.totals
        old_window = self.state.current_chat_history
        default_route = outcome.decision["type"] in ("lite", "deep") and outcome.decision["type"] not in handlers.resize
        replaced = outcome.full_replaced or _made(outcome.state)[0::2] != self.lengths[0::2]  # a node edited the list in place: index it again
        if not replaced and default_route and self.ledger.adopt_suffix(old_window, outcome.state.current_chat_history):
            self.state = outcome.state  # the window lost only its oldest messages: totals updated in O(dropped)
            self._revision += 1
            self.watch.mark(outcome.state.memo, outcome.state.settings._data)
            self.lengths = _made(self.state)
        else:
            self.install(outcome.state, reindex=replaced)
        self.trace.add(context.trace.record(self.trace.next_seq, state, before, self.ledger.totals, outcome, outcome.error,  # type: ignore[arg-type]
                                            force not in (False, None)))
        if outcome.error is not None:
            raise outcome.error
        return self.state.current_chat_history

    # -- adopting a state ----------------------------------------------------------------
    def trim_archived(self) -> None:
        """``session.memory.trim_window``: archived messages leave the window (the system prompt stays)."""
        state, index_of = self.state, self.ledger.index_of
        system = system_prompt(state)
        kept = [m for m in state.current_chat_history
                if m is system or (position := index_of(m)) is None or position >= state.archived_through]
        if len(kept) != len(state.current_chat_history):
            self.install(dataclasses.replace(state, current_chat_history=kept), reindex=False)

    def install(self, state: SessionState, *, reindex: bool = True, shared: int | None = None,
                before: Sequence[BaseMessage] | None = None) -> None:
        """Adopt a state: rebuild what is derived from it (index, sizes, window totals).

        Measures of messages the new state shares with the old one are kept (a reload that
        only adds messages costs O(what it adds) in measuring, O(history) in indexing; ``shared``:
        the caller knows the new history starts with the old one's first ``shared`` messages,
        so indexing costs O(what follows them); ``before``: the old history as it was, when the
        caller rearranged its list in place after those ``shared`` messages).
        """
        previous = getattr(self, "ledger", None)
        old: Sequence[BaseMessage] | None = None
        if previous is None:
            ledger = Ledger(state)
        elif reindex:
            old = self.state.full_chat_history if before is None else before
            ledger = Ledger(state, previous, old, shared)  # what it shares with the old history is kept
        else:
            ledger = previous
            ledger.rebuild(state, reindex=False)
        try:
            ledger.sync(state, state.settings.resolved())
        except BaseException:
            if ledger is not previous:
                ledger.abandon()  # the session keeps its state and its ledger as they were
            raise
        self.ledger = ledger
        self.state = state
        if old is not None:  # stamps by position stay where the same messages stay; the others by id
            self.arrivals.settle(old, state.full_chat_history, shared if shared is not None else ledger.kept)  # the prefix the ledger found
        window = state.current_chat_history
        self.extras = any(self.has_extras(m) for m in window) or bool(state.full_chat_history and self.has_extras(state.full_chat_history[0]))
        self._revision += 1
        self.watch.mark(state.memo, state.settings._data)
        self.lengths = _made(state)  # what went through the session
