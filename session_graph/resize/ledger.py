"""The session's running accounting: message positions, sizes, tokens and window totals.

Everything here is derived from the state and rebuilt from it after a resize or a load;
per message it costs O(size of the message), never O(history): each message is measured
once (chars always, tokens when a token counter is in use) and the totals are running sums.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
import math
from typing import Any

from langchain_core.messages import BaseMessage, SystemMessage

from session_graph.accounting.budget import window_room
from session_graph.accounting.sizing import Measures
from session_graph.accounting.tokens import (
    ApproxTokenCounter,
    CharCounter,
    CostRules,
    TokenCounter,
    counter_for,
    message_tokens,
    token_measure,
)
from session_graph.accounting.window import RunningTotals, WindowTotals
from session_graph.compression.context import context_message
from session_graph.errors import MessageError
from session_graph.messages import role_of
from session_graph.resize.history import LazyHistory, Spliced
from session_graph.resize.state import SessionState
from session_graph.settings import Limits

__all__ = ["Ledger"]

_ESTIMATE = ApproxTokenCounter()
_EXTEND_FROM = 1_000  # shorter histories are re-indexed whole (as cheap, and simplest)


class Ledger:
    """Positions of messages in the full history, their sizes and tokens, and the window totals."""

    __slots__ = ("_bounds", "_context", "_counter_key", "_custom", "_full", "_index", "_indexed", "_lazy", "_running", "_snapshot", "_synced",
                 "_undo", "counter", "kept", "measures", "rules", "size", "tokens")

    def __init__(self, state: SessionState, previous: Ledger | None = None, before: Sequence[BaseMessage] | None = None,
                 shared: int | None = None) -> None:
        self._index: dict[str, int] = {}  # positions by id, up to ``_indexed``; an appended message's is in its measures' entry
        self._indexed = 0  # the history's length when the index was built (or last settled)
        self._full: Sequence[BaseMessage] = state.full_chat_history  # the history indexed (read to check an appended message's position)
        self._lazy: LazyHistory | None = None  # a history whose middle is still in the store
        self.measures = Measures()  # each message's chars and tokens, one entry by id
        self.size: Callable[[BaseMessage], int] = self.measures.chars
        self.counter: TokenCounter = CharCounter()
        self.rules = CostRules()
        self.tokens: Callable[[BaseMessage], int] | None = None  # None: no token counter (tokens are chars)
        self._counter_key: object = None
        self._synced: Limits | None = None  # the settings the counter was last checked against
        self._custom: TokenCounter | None = None  # a counter the user plugged in (Session.set_token_counter)
        self._running = RunningTotals()  # the window's totals, updated in place per append
        self._snapshot: WindowTotals | None = WindowTotals()  # the same, frozen, made when read
        self._context: tuple[object, int] = (None, 0)
        self._bounds: tuple[Any, ...] | None = None  # what the default judge compares the running totals with (``quiet``)
        self._undo: Callable[[], None] | None = None  # puts back the index taken over from the previous ledger
        self.kept: int | None = None  # how many leading messages the new history shares with ``before`` (its index taken over), if known
        if previous is not None:  # a history that shares message objects keeps their measures (each checks identity)
            self.measures, self.size, self.counter, self.rules = previous.measures, previous.size, previous.counter, previous.rules
            self.tokens, self._counter_key, self._custom = previous.tokens, previous._counter_key, previous._custom
            self._undo = self._extend_index(state, previous, before, shared) if before is not None else None
            if self._undo is None:
                self._reindex(state)
            try:
                self.rebuild(state, reindex=False)
            except BaseException:
                self.abandon()
                raise
            return
        self.rebuild(state, reindex=True)

    @property
    def custom(self) -> TokenCounter | None:
        """A counter the user plugged in (``Session.set_token_counter``); it wins over the settings'."""
        return self._custom

    @custom.setter
    def custom(self, counter: TokenCounter | None) -> None:
        self._custom, self._synced = counter, None  # the next sync compares the counters again

    @property
    def counter_key(self) -> object:
        """What names the counter in use and its cost rules (a new value whenever they change)."""
        return self._counter_key

    @property
    def totals(self) -> WindowTotals:
        """The window's totals, frozen (made once per change, when read)."""
        snapshot = self._snapshot
        if snapshot is None:  # an append drops it
            snapshot = self._snapshot = self._running.snapshot()
        return snapshot

    @totals.setter
    def totals(self, totals: WindowTotals) -> None:
        self._running, self._snapshot = RunningTotals(totals), totals

    @property
    def running(self) -> RunningTotals:
        """The window's totals as they run (what the default judge compares; do not change them)."""
        return self._running

    # -- lookups -----------------------------------------------------------------------------
    def index_of(self, message: BaseMessage) -> int | None:
        """Where a message sits in the full history, or None if it is not there."""
        return self.position(message.id or "")

    def position(self, message_id: str) -> int | None:
        """Where the message with this id sits in the full history, or None if it is not there."""
        position = self._index.get(message_id)
        if position is None:
            position = self._appended(message_id)
            if position is None and self._lazy is not None:
                self._index_middle()
                position = self._index.get(message_id)
        return position

    def holds(self, message_id: str) -> bool:
        """``position(message_id) is not None`` in one call (``Session.__contains__``: each message of an agent's state, each step)."""
        return message_id in self._index or ((entry := self.measures.entries.get(message_id)) is not None and self._indexed <= entry[3]
                < len(self._full) and self._full[entry[3]].id == message_id) or (self._lazy is not None and self.position(message_id) is not None)

    def held_position(self, message_id: str) -> int | None:
        """``position`` without reading a lazy history's middle (None for a message there)."""
        position = self._index.get(message_id)
        return position if position is not None else self._appended(message_id)

    def held_positions(self, message_ids: list[str]) -> list[int | None]:
        """``held_position`` of each id, in one pass (a reader of many, ``Arrivals.instants``)."""
        index, entries, full, indexed, size = self._index, self.measures.entries, self._full, self._indexed, len(self._full)
        return [index.get(i) if i in index else  # else as ``_appended`` reads its entry
                e[3] if (e := entries.get(i)) is not None and indexed <= e[3] < size and full[e[3]].id == i else None for i in message_ids]

    def appended_from(self, position: int) -> bool:
        """Whether all from ``position`` on were appended since the index was built (ids unique: ``check_new``)."""
        return position >= self._indexed

    def distinct_ids(self) -> bool:
        """Whether each message held (not a lazy history's middle) has an id of its own, indexed."""
        lazy, held = self._lazy, len(self._full)
        if lazy is not None:
            if not lazy.start:  # its middle read since the index was built: not indexed yet
                return False
            held -= lazy.start - 1
        return len(self._index) == held and self._indexed == len(self._full)

    def _appended(self, message_id: str) -> int | None:
        """The position of a message appended since the index was built: the one its measures'
        entry recorded, trusted only while the history holds a message with this id there (a
        new history, a new counter's measures or an edited copy's entry cannot mislead it)."""
        position = self.measures.position(message_id)
        full = self._full
        if self._indexed <= position < len(full) and full[position].id == message_id:
            return position
        return None

    def _settle(self, history: Sequence[BaseMessage]) -> None:
        """Index what was appended since the index was built (``history``: the one it was built
        on): before its measures are dropped (a new counter) or another ledger takes it over."""
        index = self._index
        for position in range(self._indexed, len(history)):
            message_id = history[position].id
            if message_id:
                index[message_id] = position
        self._indexed = len(history)

    def _reindex(self, state: SessionState) -> None:
        """Index the history by id: what is held now; a lazy history's middle when first needed."""
        full = state.full_chat_history
        if isinstance(full, LazyHistory) and not full.loaded:
            self._index = {m.id: i for i, m in full.held() if m.id}
            self._lazy = full
        else:
            self._index = {m.id: i for i, m in enumerate(full) if m.id}
            self._lazy = None
        self._full, self._indexed = full, len(full)

    def _extend_index(self, state: SessionState, previous: Ledger, before: Sequence[BaseMessage],
                      known: int | None = None) -> Callable[[], None] | None:
        """Take over ``previous``'s index when the new history starts with the same message objects
        as ``before`` (the history it indexed) up to a point: only what differs after it is
        re-indexed (a merge that adds another writer's messages costs O(those), not O(history)).
        ``known``: the caller built the new history on the old one's first ``known`` messages (a
        merge): only the last of them is checked; ``before`` may then be a ``Spliced`` view of the
        old history, when the caller rearranged its list in place after them. Returns how to put
        the previous index back, or None when this does not apply."""
        full = state.full_chat_history
        if previous._lazy is not None or not isinstance(full, list) or not isinstance(before, list | Spliced):
            return None
        if known is not None:
            shared = known if known <= min(len(before), len(full)) and known and before[known - 1] is full[known - 1] else 0
            if shared < _EXTEND_FROM:
                return None
        else:
            shared = min(len(before), len(full))
            while shared and before[shared - 1] is not full[shared - 1]:  # the usual: walks back over my unsaved tail
                shared -= 1
            if shared < _EXTEND_FROM or before[:shared] != full[:shared]:  # the same objects before it (identity first)
                return None
        previous._settle(before)  # what it appended since its index was built, indexed first (true of its history too)
        index = previous._index  # taken over in place (a copy is O(history)); abandon() puts it back
        removed = {m.id: index.pop(m.id) for m in before[shared:] if m.id and m.id in index}
        added = [(position, m.id) for position, m in enumerate(full[shared:], shared) if m.id]
        replaced = {i: index[i] for _, i in added if i in index}
        for position, message_id in added:
            index[message_id] = position
        self._index, self._full, self._indexed, self.kept = index, full, len(full), shared

        def undo() -> None:
            for _, message_id in added:
                index.pop(message_id, None)
            index.update(replaced)
            index.update(removed)

        return undo

    def abandon(self) -> None:
        """This ledger will not be used (its install failed): give the previous one its index back."""
        undo, self._undo = self._undo, None
        if undo is not None:
            undo()

    def _index_middle(self) -> None:
        """Add the middle of a lazy history to the index (its ids only, when the store can read them)."""
        lazy, self._lazy = self._lazy, None
        if lazy is not None:
            for position, id_ in enumerate(lazy.middle_ids(), 1):
                if id_:
                    self._index.setdefault(id_, position)

    def token_count(self, message: BaseMessage) -> int:
        """Tokens of one message with the counter in use (its chars when there is none)."""
        return self.tokens(message) if self.tokens is not None else self.size(message)

    def uncached_count(self, message: BaseMessage) -> int:
        """``token_count`` of a message not in the history (a view's merged system message), cached nowhere (its id may be held)."""
        return self.measures.uncached_tokens(message)

    def measure_context(self, message: BaseMessage) -> int:
        """Tokens of a summary or memo message: exact with a token counter, else the estimate."""
        return message_tokens(message, self.counter if self.tokens is not None else _ESTIMATE, self.rules)

    def held_tokens(self, state: SessionState, limits: Limits) -> int:
        """Tokens the summary or memo message takes in the view: what it holds, at most its reserve (cached per memo: O(1) a judge)."""
        if not (limits.summary_enabled or limits.memo_enabled):
            return 0
        memo = state.memo
        # the memo itself, not its id(): a new memo may take a freed one's address (compared by identity first)
        key = (memo, len(memo), memo.get("summary"), limits.summary_enabled, self._counter_key)
        if self._context[0] != key:
            message = context_message(state.id, memo, limits)
            self._context = (key, self.measure_context(message) if message is not None else 0)
        return min(self._context[1], limits.reserve_tokens)

    def fixed_tokens(self, state: SessionState, limits: Limits) -> int:
        """Tokens every request spends outside the window: system prompt, summary or memo as held, priming."""
        system = system_prompt(state)
        window = state.current_chat_history
        outside = system is not None and not (window and window[0] is system)
        held = self.held_tokens(state, limits)
        return (self.token_count(system) if outside and system is not None else 0) + held + limits.reply_priming

    # -- updates -----------------------------------------------------------------------------
    def check_new(self, message: BaseMessage, session_id: str) -> None:
        """Refuse a message whose id is already in the history."""
        if message.id and self.holds(message.id):
            raise MessageError(f"a message with id {message.id!r} is already in session {session_id}; "
                               "append each message once (give a copy a new id to repeat it).")

    def add(self, message: BaseMessage, position: int, session_id: str | None = None) -> str:
        """Account for one appended message; returns its role. With ``session_id``, first refuse
        it as ``check_new`` does (one call per append instead of two)."""
        key, index, role = message.id, self._index, role_of(message)
        if session_id is not None and key:
            if key in index or self._lazy is not None or key in self.measures.entries:
                self.check_new(message, session_id)  # raises for a known id (a lazy history's middle is looked up there)
            size, tokens = self.measures.add(message, role, position)  # its one record: sizes and position (registered last)
        else:
            size, tokens = self.measures.add(message, role, position)  # measured first: a message that cannot be measured is not registered
            index[key or ""] = position
        running = self._running
        if not running.count:
            self._bounds = None  # the first message of the window: what lies outside it may have changed
        running.add(role, size, tokens if self.tokens is not None else 0)
        self._snapshot = None
        return role

    def moved(self, message: BaseMessage, position: int) -> int:
        """``add``'s message is appended at ``position`` after all (not where ``add`` was told): its record says so."""
        entry = self.measures.entries.get(message.id or "")
        if entry is not None and entry[0] is message:
            self.measures.entries[message.id or ""] = (entry[0], entry[1], entry[2], position)
        elif not message.id:
            self._index[""] = position
        return position

    def quiet(self, state: SessionState, limits: Limits) -> bool:
        """True when the default policy surely decides nothing: the running totals are under every
        limit and no ``every_n_turns`` resize is due. O(1): the bounds (the token room after the
        system prompt, the memo as held and the priming) are worked out once per change of what
        they depend on (the settings, the memo, the window's first message, the counter)."""
        memo = state.memo
        bounds = self._bounds
        if (bounds is None or bounds[0] is not limits or bounds[1] is not memo or bounds[2] != len(memo)
                or bounds[3] is not memo.get("summary")):
            room = window_room(limits.tokens, self.fixed_tokens(state, limits))
            bounds = self._bounds = (limits, memo, len(memo), memo.get("summary"), limits.chars or math.inf,
                                     limits.messages or math.inf, room if room > 0 else math.inf)
        running = self._running
        every = limits.every_n_turns
        return (running.tokens <= bounds[6] and running.chars < bounds[4] and running.count <= bounds[5]
                and not (every and state.turns - state.last_resize_turn >= every))

    def sync(self, state: SessionState, limits: Limits) -> None:
        """Switch token counters when the settings asked for another one (recounts the window)."""
        if limits is self._synced:  # the same resolved settings object as last time (it is cached until a change)
            return
        key = (limits.counter, limits.per_message, limits.per_name, self.custom)
        if key == self._counter_key:
            self._synced = limits
            return
        self._counter_key, self._bounds = key, None
        self._settle(state.full_chat_history)  # the positions in the measures' entries, indexed before they are dropped
        self.rules = CostRules(per_message=limits.per_message, per_name=limits.per_name, reply_priming=limits.reply_priming)
        if limits.counter is None and self.custom is None:
            self.counter = CharCounter()
            self._measure_with(None)
        else:
            if self.custom is not None:  # the user's own counter wins over the settings' encoding or model
                counter = self.custom
            else:
                encoding, model, approximate = limits.counter  # type: ignore[misc]
                counter = counter_for(encoding=encoding, model=model, approximate=approximate)
            rules = self.rules
            self.counter = counter
            self._measure_with(token_measure(counter, rules))
        self.rebuild(state, reindex=False)
        self._synced = limits

    def adopt_suffix(self, old: list[BaseMessage], new: list[BaseMessage]) -> bool:
        """Update the totals for a window that is a suffix of the old one, in O(what was dropped).

        Returns False (and changes nothing) when ``new`` is not such a suffix, or when the cut
        reached into the newest unit or turn (whose counts the totals keep); then rebuild.
        """
        dropped = len(old) - len(new)
        totals = self.totals
        if dropped < 0 or totals.count != len(old) or (new and (new[0] is not old[dropped] or new[-1] is not old[-1])):
            return False
        if not new and old:
            return False
        if dropped > totals.count - max(totals.tail_count, totals.turn_count):
            return False
        self._bounds = None
        chars, tokens = self.measures.sums(old[:dropped])  # O(dropped)
        self.totals = WindowTotals(totals.chars - chars, totals.count - dropped, totals.tail_count, totals.tokens - tokens,
                                   totals.turn_count)
        return True

    def _measure_with(self, tokens: Callable[[BaseMessage], int] | None) -> None:
        """Measure afresh (a new cache: a previous ledger sharing the old one keeps it), tokens with ``tokens``."""
        self.measures = Measures(tokens)
        self.size = self.measures.chars
        self.tokens = self.measures.tokens if tokens is not None else None

    def rebuild(self, state: SessionState, *, reindex: bool) -> None:
        """Recompute the window totals (and, if the full history was replaced, the index)."""
        if reindex:
            self._reindex(state)
            self._measure_with(token_measure(self.counter, self.rules) if self.tokens is not None else None)
        window = state.current_chat_history
        self._full = state.full_chat_history
        self._bounds = None
        self.totals = WindowTotals.of(
            [role_of(m) for m in window],
            [self.size(m) for m in window],
            [self.tokens(m) for m in window] if self.tokens is not None else None,
        )


def system_prompt(state: SessionState) -> BaseMessage | None:
    """The system prompt: the first message of the full history, if it is a system message."""
    full = state.full_chat_history
    return full[0] if full and isinstance(full[0], SystemMessage) else None
