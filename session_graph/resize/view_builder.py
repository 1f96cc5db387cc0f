"""The view built incrementally: the last view extended in O(new messages) after appends, and
rebased after a prune (the window lost its oldest messages) instead of rebuilt; anything else
falls back to ``view.build_with_tail``, which builds the view whole and the tail to extend next.
"""

from __future__ import annotations

from collections.abc import Callable
from operator import is_

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage

from session_graph.resize.ledger import Ledger, system_prompt
from session_graph.resize.state import SessionState
from session_graph.resize.system_order import MergeCache, arranged_view
from session_graph.resize.view import SessionView, Tail, build_with_tail, cancelled
from session_graph.settings import Limits

__all__ = ["ViewBuilder"]


class ViewBuilder:
    """Builds views, in O(new messages) when the last view can be extended (see ``Tail``)."""

    def __init__(self) -> None:
        self._tail: Tail | None = None
        self._merges = MergeCache()  # a "merge" of system messages, made and counted once per content

    def build(self, state: SessionState, ledger: Ledger, limits: Limits, outside_tokens: int = 0) -> SessionView:
        """The view of ``state`` (the same as ``build_view``), system messages arranged as
        ``session.view.system_messages`` says (see ``system_order``)."""
        view = self._build(state, ledger, limits, outside_tokens)
        if limits.system_messages == "keep":  # the default: nothing to arrange
            return view
        return arranged_view(view, limits.system_messages, ledger.token_count, limits.reply_priming + outside_tokens,
                             lambda systems: self._merges.merged(systems, ledger.counter_key, ledger.uncached_count))

    def _build(self, state: SessionState, ledger: Ledger, limits: Limits, outside_tokens: int) -> SessionView:
        shows_memo = limits.memo_enabled or limits.summary_enabled  # lite mode shows no memo: its last_resize note is not a change
        memo = state.memo  # held, not its id(): a new memo may take a freed one's address; the summary: edited in place
        memo_key = (memo, len(memo), memo.get("summary")) if shows_memo else None
        # the counter itself (two users' counters may share a name); the system prompt (a restore may
        # change it and keep the window list)
        key = (limits, outside_tokens, memo_key, ledger.counter_key, system_prompt(state))
        tail = self._tail
        if tail is not None and tail.key == key and tail.window is not state.current_chat_history:
            tail = self._rebase(tail, state.current_chat_history, ledger.token_count)
        if tail is not None and tail.window is state.current_chat_history and tail.key == key:
            view = self._extend(tail, ledger, limits, outside_tokens)
            if view is not None:
                return view
        view, self._tail = build_with_tail(state, ledger, limits, outside_tokens)
        if self._tail is not None:
            self._tail.key = key
        return view

    def _rebase(self, tail: Tail, window: list[BaseMessage], measure: Callable[[BaseMessage], int]) -> Tail | None:
        """The tail for a window that is the old one less its oldest messages (what a prune
        does; a system prompt pinned at the front stays), with any messages appended since:
        O(the part that survived, in a C loop, + what was appended); None when the window is anything else."""
        old = tail.window
        if not old or not window:
            self._tail = None
            return None
        end, last = len(window), old[-1]
        while end > 0 and window[end - 1] is not last:  # messages appended after the prune (an agent's next turn)
            end -= 1
        pin = 1 if window[0] is old[0] and isinstance(window[0], SystemMessage) and tail.keep_from >= 1 else 0
        dropped = len(old) - end
        first = pin + dropped  # the oldest surviving message, in ``old``
        kept_old = max(tail.keep_from, first)
        kept_new = kept_old - dropped
        if (end == 0 or dropped <= 0 or end <= pin or window[pin] is not old[first] or tail.newest_user < first
                or (first > tail.keep_from and not isinstance(window[pin], HumanMessage))
                # every surviving message the same object (a C loop), not only those the view showed:
                # one the view left out for its size, replaced by a smaller one, may fit now
                or not all(map(is_, window[pin:end], old[first:]))):
            self._tail = None
            return None
        if first > tail.keep_from:  # the last view showed messages the prune dropped
            tail.used -= sum(measure(m) for m in old[tail.keep_from : first])
        tail.window, tail.length = window, tail.length - dropped
        tail.keep_from, tail.newest_user = kept_new, tail.newest_user - dropped
        return tail

    @staticmethod
    def _extend(tail: Tail, ledger: Ledger, limits: Limits, outside_tokens: int) -> SessionView | None:
        window, measure = tail.window, ledger.token_count
        length = len(window)
        if length < tail.length:
            return None
        pending: set[str] = set()
        owner: AIMessage | None = None
        newest_user = tail.newest_user
        used = tail.used
        for index in range(tail.length, length):  # O(new messages): each is read and measured once
            message = window[index]
            used += measure(message)
            if isinstance(message, ToolMessage):
                if message.tool_call_id not in pending:
                    return None  # a result whose call is not just before it: the full path drops it
                pending.discard(message.tool_call_id)
                continue
            if pending:
                return None  # a call left unanswered before a newer message: the full path answers it
            if isinstance(message, AIMessage) and message.tool_calls:
                pending, owner = {c.get("id") or "" for c in message.tool_calls}, message
            elif isinstance(message, HumanMessage):
                newest_user = index
        # calls still running at the end (the agent is between a call and its results): answered
        # in the view as the full path answers them; the tail stays before them, so the next
        # view reads the call again with whatever results have arrived
        synthetic = [cancelled(c, owner) for c in owner.tool_calls if (c.get("id") or "") in pending] if pending and owner else []
        floor = min(measure(window[newest_user]), tail.room // 2) if newest_user >= 0 else 0
        room = tail.room - tail.system_tokens
        if tail.extra is not None and tail.extra_tokens > min(limits.reserve_tokens, room - floor):
            return None  # the summary or memo message would be shortened differently
        for message in synthetic:
            used += measure(message)
        keep_from, room = tail.keep_from, room - tail.extra_tokens
        while used > room and keep_from < length:  # whole units leave from the front
            used -= measure(window[keep_from])
            keep_from += 1
            while keep_from < length and isinstance(window[keep_from], ToolMessage):
                used -= measure(window[keep_from])
                keep_from += 1
        if keep_from > newest_user or newest_user < 0:
            return None  # the current turn alone is over the budget: the full path elides
        while not isinstance(window[keep_from], HumanMessage):
            used -= measure(window[keep_from])
            keep_from += 1
        fixed = limits.reply_priming + outside_tokens
        total = fixed + tail.system_tokens + tail.extra_tokens + used
        if total > limits.tokens:
            return None
        if not synthetic:
            tail.length, tail.keep_from, tail.used, tail.newest_user = length, keep_from, used, newest_user
        messages = tail.head + window[keep_from:]
        if synthetic:
            messages += synthetic
        return SessionView(messages, total, limits.tokens, ledger.counter.name, ledger.counter.exact, low_water=limits.prune_tokens)
