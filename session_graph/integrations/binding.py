"""The agent step: which session a run uses, and the one step every plug point runs.

A step resolves the run's session (one fixed ``Session``, or one per LangGraph ``thread_id``
from a ``SessionManager``), records the messages it does not hold yet, judges, resizes, and
saves when the agent's state is about to drop messages the store does not hold. The
middleware, the graph node, the pre-model hook and the glue are thin adapters around it.

The step is written once, as a generator of operations, and driven synchronously or
asynchronously: the async driver awaits the store's async twins (never blocking the event
loop on disk) and holds a per-session lock, so concurrent runs on one session take turns
instead of failing. A memo or summary model that fails inside a step never fails the user's
turn unless asked to (``on_memory_error="raise"``): the turn goes on with the window kept
up to the memo cursor (the view still fits the token budget), a warning is logged, and the
next step resumes the fold from the cursor.
"""

from __future__ import annotations

import asyncio
from collections.abc import Generator, Sequence
import logging
import threading
import time
from typing import Any, Literal, NamedTuple, TypedDict
import weakref

from langchain_core.messages import BaseMessage
from langchain_core.runnables import RunnableConfig
from langgraph.config import get_config

from session_graph._base.forks import renew_after_fork
from session_graph.errors import ConfigurationError, MemoUpdateError
from session_graph.integrations.pruned import before_resize, edited_since_save, only_pruned
from session_graph.integrations.step_locks import lock_of, locks_of
from session_graph.integrations.turn_messages import is_view_artifact
from session_graph.session import Session
from session_graph.stores.lease import CommitLease
from session_graph.stores.manager import SessionManager

__all__ = ["BindingOptions", "OnMemoryError", "SessionBinding", "run_config"]

log = logging.getLogger(__name__)

OnMemoryError = Literal["keep_going", "raise"]

FOLD_LEASE_TTL = 120.0
"""Seconds a fold lease lasts: a process that died folding holds the session's folds that long."""
FOLD_WAIT = 30.0
"""Seconds a step waits for another process's fold lease before it folds without it."""
FOLD_POLL = 0.05
STEP_POLL = 0.005
"""Seconds an async step sleeps between tries of the lock a thread's step on its key holds."""


def run_config() -> RunnableConfig:
    """The running LangGraph task's config ({} outside a run: a hook or a step called directly)."""
    try:
        return get_config()
    except RuntimeError:
        return {}


class BindingOptions(TypedDict, total=False):
    """The keyword options every plug point passes on to its ``SessionBinding``."""

    manager: SessionManager | None
    key_prefix: str
    on_memory_error: OnMemoryError
    share_across_threads: bool


class _Op(NamedTuple):  # a tuple: made several times a step, without a frozen dataclass's per-field setattr
    kind: Literal["session", "judge", "resize", "fold", "save", "write"]
    target: Any


class SessionBinding:
    """A fixed session, or sessions by thread from a manager, and the agent step over them.

    Args:
        session: the one session every run uses.
        manager: where per-thread sessions live (``thread_id`` -> key ``key_prefix + thread_id``).
        key_prefix: prepended to the thread id to make the session key.
        on_memory_error: ``"keep_going"`` (default: a failing memo or summary model logs a
            warning and the turn goes on) or ``"raise"``.
        share_across_threads: let one fixed session serve several ``thread_id``s on purpose
            (by default that is refused: two users would see each other's history).
    """

    def __init__(
        self,
        session: Session | None = None,
        *,
        manager: SessionManager | None = None,
        key_prefix: str = "",
        on_memory_error: OnMemoryError = "keep_going",
        share_across_threads: bool = False,
    ) -> None:
        if (session is None) == (manager is None):
            raise ConfigurationError("give either a session or a SessionManager (for one session per thread_id), not both.")
        if session is not None and not isinstance(session, Session):
            raise ConfigurationError(f"session must be a session_graph Session, got {type(session).__name__}.")
        if on_memory_error not in ("keep_going", "raise"):
            raise ConfigurationError(f"on_memory_error must be 'keep_going' or 'raise', got {on_memory_error!r}.")
        self.fixed = session
        self.manager = manager
        self.key_prefix = key_prefix
        self.on_memory_error = on_memory_error
        self.share_across_threads = share_across_threads
        self.fold_wait = FOLD_WAIT  # seconds a step waits for another process's fold lease (then folds without it)
        self._thread: str | None = None
        self._live: weakref.WeakValueDictionary[str, Session] = weakref.WeakValueDictionary()  # the manager's cache keeps them
        self._locks = locks_of(manager if manager is not None else session)  # shared by every binding over it
        self._guard = threading.Lock()
        self._recent: tuple[str, Any] | None = None  # the last key's thread lock (a strong reference: it stays in _locks)
        renew_after_fork(self)

    def _after_fork(self) -> None:
        """A forked child: a new guard of the thread check (a parent thread holding it is not there), no remembered lock."""
        self._guard = threading.Lock()
        self._recent = None

    # -- which session -----------------------------------------------------------------------
    def key(self, config: RunnableConfig | None = None) -> str:
        """The session key of this run (checks that a fixed session stays on one thread)."""
        config = run_config() if config is None else config
        thread = (config.get("configurable") or {}).get("thread_id")
        if self.fixed is not None:
            if thread is not None and not self.share_across_threads:
                thread = str(thread)
                with self._guard:
                    self._thread = self._thread or thread
                if thread != self._thread:
                    raise ConfigurationError(
                        f"this fixed session serves thread_id {self._thread!r}; thread {thread!r} would see its "
                        "history. Give a SessionManager (one session per thread_id), or pass "
                        "share_across_threads=True if the threads really share one conversation."
                    )
            return self.fixed.id
        if thread is None:
            raise ConfigurationError(
                "sessions by thread need a thread id: invoke with config={'configurable': {'thread_id': '...'}}."
            )
        return f"{self.key_prefix}{thread}"

    def live(self, key: str) -> Session | None:
        """The session the latest step of ``key`` used, without touching the store (None once
        nothing holds it: the manager's cache let it go and no run uses it)."""
        return self.fixed if self.fixed is not None else self._live.get(key)

    def session(self, config: RunnableConfig | None = None) -> Session:
        """The session of this run (loaded from the manager's store when needed)."""
        return self.step((), config, resize=False, save=False)

    @staticmethod
    def record(session: Session, messages: Sequence[Any]) -> int:
        """Append the messages the session does not hold yet (by id); returns how many.

        What the view made (the summary or memo message, synthetic tool results) is skipped.
        """
        added, holds = 0, session._ledger.holds  # ``message in session``, by id, without its frame and type check per message
        for message in messages:
            if isinstance(message, BaseMessage) and (((key := message.id) and holds(key)) or is_view_artifact(message)):
                continue
            session.append_message(message)
            added += 1
        return added

    # -- the step ------------------------------------------------------------------------------
    def step(
        self, messages: Sequence[Any], config: RunnableConfig | None = None, *, resize: bool = True,
        save: bool | int = 0, durable: bool = True, session: Session | None = None,
    ) -> Session:
        """Record ``messages``, judge and resize (when ``resize``), save when needed; returns the session.

        ``save``: True saves whenever something changed; an int ``n`` saves only when a resize
        ran or more than ``n`` messages are not stored yet (the caller's state still holds its
        newest ``n``; for ``n`` > 0 a lite prune then waits for the next write: ``pruned.py``);
        False never saves. ``durable=False``: the save is written but not flushed to disk where the store can defer that (see ``SessionManager.save``). ``session``: the
        one an earlier step of this run returned, used as is while the manager still caches it
        (no look-up in the store; a save merges what another process wrote meanwhile).
        """
        key = self.key(config)
        cache = self.manager.cache if self.manager is not None else None
        with self._thread_lock(key):  # taken before the session is read: see _lock
            if cache is not None:
                cache.hold(key)  # the step's session stays in the manager's cache while the step uses it (SessionCache.hold)
            try:
                known = self._known(key, session) if not resize else None
                if known is not None:  # a reply or a tool result of the turn's session: no flow to drive
                    if (op := self._direct(key, known, messages, save, durable)) is not None:
                        self._do(op)
                    return known
                flow = self._flow(key, messages, resize, save, durable, session)
                reply: Any = None
                while True:
                    try:
                        op = flow.send(reply)
                    except StopIteration as stop:
                        return stop.value
                    reply = self._do(op)
            finally:
                if cache is not None:
                    cache.release(key)

    async def astep(
        self, messages: Sequence[Any], config: RunnableConfig | None = None, *, resize: bool = True,
        save: bool | int = 0, locked: bool = True, durable: bool = True, session: Session | None = None,
    ) -> Session:
        """Async twin of :meth:`step` (store I/O off the event loop, one step per session at a time).

        ``locked=False``: the caller already holds ``async_lock(session)`` for a longer span.
        """
        key = self.key(config)
        lock = self._lock(key, asyncio.get_running_loop(), asyncio.Lock) if locked else None
        if lock is not None:
            await lock.acquire()  # before the session is read: see _lock
        threads = self._thread_lock(key)  # a thread's step on the key (invoke beside ainvoke)
        try:
            while not threads.acquire(blocking=False):  # never blocks the event loop: polled
                await asyncio.sleep(STEP_POLL)
        except BaseException:
            if lock is not None:
                lock.release()
            raise
        cache = self.manager.cache if self.manager is not None else None
        try:
            if cache is not None:
                cache.hold(key)  # as in step
            known = self._known(key, session) if not resize else None
            if known is not None:  # as in step: no flow to drive
                if (op := self._direct(key, known, messages, save, durable)) is not None:
                    await self._ado(op)
                return known
            flow = self._flow(key, messages, resize, save, durable, session)
            reply: Any = None
            while True:
                try:
                    op = flow.send(reply)
                except StopIteration as stop:
                    return stop.value
                reply = await self._ado(op)
        finally:
            if cache is not None:
                cache.release(key)
            threads.release()
            if lock is not None:
                lock.release()

    def async_lock(self, session: Session) -> asyncio.Lock:
        """The per-session lock of the running event loop."""
        return self._lock(session.id, asyncio.get_running_loop(), asyncio.Lock)

    def _lock(self, key: str, owner: Any, make: Any) -> Any:
        """The lock of one session key (per event loop, or one for all threads; an async step
        takes the threads' one too, polled, so ``invoke`` and ``ainvoke`` on a key take turns).

        Keyed by the session key, not the session object, and taken before the step reads the
        session: two runs on one new (or just changed) thread must not each load or create their
        own object and save over each other (one user message or reply would be lost). The locks
        belong to the manager (or the fixed session), not to this binding: two agents over one
        manager share its cached session objects, so their steps on a key take turns too.
        """
        return lock_of(self._locks, key, owner, make)

    def _thread_lock(self, key: str) -> Any:
        """The threads' lock of ``key`` (``_lock``), remembered: a turn's ~5 steps use one key (no global guard each)."""
        recent = self._recent
        if recent is not None and recent[0] == key:
            return recent[1]
        lock = self._lock(key, "thread", threading.RLock)
        self._recent = (key, lock)
        return lock

    def _known(self, key: str, known: Session | None) -> Session | None:
        """The session a step uses without asking the store: the fixed one, or ``known`` (the one
        an earlier step of this run returned) while the manager still caches it; else None."""
        if self.fixed is not None or known is None:
            return self.fixed
        entry = self.manager.cache.get(key)  # type: ignore[union-attr]
        return known if entry is not None and entry.session is known else None

    def _direct(self, key: str, session: Session, messages: Sequence[Any], save: bool | int, durable: bool) -> _Op | None:
        """A step that does not resize, on a session it need not look up (``_known``): no flow."""
        if self._live.get(key) is not session:  # the same one on most steps: no new weak reference (``live``)
            self._live[key] = session
        self.record(session, messages)
        return _Op("save" if durable else "write", session) if self._save_needed(session, save, False) else None

    def _save_needed(self, session: Session, save: bool | int, resized: bool) -> bool:
        """Whether a step that ``resized`` (or not) saves, as ``step``'s ``save`` says."""
        if self.manager is None or save is False:
            return False
        return save is True or resized or self.manager.unsaved(session) > int(save) or edited_since_save(self.manager, session)

    def _flow(self, key: str, messages: Sequence[Any], resize: bool, save: bool | int,
              durable: bool = True, known: Session | None = None) -> Generator[_Op, Any, Session]:
        session = self._known(key, known)
        if session is None:
            session = yield _Op("session", key)
        self._direct(key, session, messages, False, durable)  # recorded (no save yet)
        resized = False
        if resize and (yield _Op("judge", session)):
            if self._shared_fold(session):  # another process may fold this session now: one fold, under its lease
                resized = bool((yield _Op("fold", key)))  # the same session object, merged in place
            else:
                held = before_resize(session) if self.manager is not None and type(save) is int and save > 0 else None
                yield _Op("resize", session)  # a prune with the unsaved messages still held: the next write carries it
                resized = held is None or not only_pruned(session, held)  # more than `save` unsaved: saved below anyway
        if self._save_needed(session, save, resized):
            yield _Op("save" if durable else "write", session)
        return session

    def _shared_fold(self, session: Session) -> bool:
        """Whether a resize of ``session`` folds under the store's fold lease: it calls a memo or
        summary model and its manager has merged another writer's save (other processes write
        this store; a single writer never pays the lease's two store writes)."""
        if self.manager is None or not self.manager.merges:
            return False
        limits = session.settings.resolved()
        return bool(limits.memo_enabled or limits.summary_enabled)

    def _fold_lease(self, key: str) -> CommitLease:
        assert self.manager is not None
        return CommitLease(self.manager.store, self.manager.tenant, key, ttl=FOLD_LEASE_TTL, purpose="fold")

    def _fold(self, key: str) -> bool:
        """Resize under the session's fold lease: once taken, the session as stored now (a fold
        another writer saved meanwhile merged in), judged again, resized and saved before the lease
        goes. While another process holds it, wait for it (up to ``fold_wait`` seconds; polling):
        its fold usually leaves nothing to fold here (two folds of one span cost two model calls,
        one of them dropped by the merge). A holder slower than that (or gone): resize as before,
        without the lease. Whether it resized."""
        lease = self._fold_lease(key)
        deadline = time.monotonic() + self.fold_wait
        while not (taken := lease.try_acquire()) and time.monotonic() < deadline:
            time.sleep(FOLD_POLL)
        try:
            session = self.manager.get_or_create(key)  # type: ignore[union-attr]
            if not session.judge_resize():
                return False
            self._do(_Op("resize", session))
            if taken:
                self.manager.save(session)  # type: ignore[union-attr]  # stored before the lease goes
            return True
        finally:
            if taken:
                lease.release()

    async def _afold(self, key: str) -> bool:
        """Async twin of ``_fold`` (the lease's store writes off the event loop; the wait sleeps on it)."""
        lease = self._fold_lease(key)
        deadline = time.monotonic() + self.fold_wait
        while not (taken := await asyncio.to_thread(lease.try_acquire)) and time.monotonic() < deadline:
            await asyncio.sleep(FOLD_POLL)
        try:
            session = await self.manager.aget_or_create(key)  # type: ignore[union-attr]
            if not await session.async_judge_resize():
                return False
            await self._ado(_Op("resize", session))
            if taken:
                await self.manager.asave(session)  # type: ignore[union-attr]
            return True
        finally:
            if taken:
                await asyncio.to_thread(lease.release)

    def _do(self, op: _Op) -> Any:
        if op.kind == "fold":
            return self._fold(op.target)
        if op.kind == "session":
            return self.fixed if self.fixed is not None else self.manager.get_or_create(op.target)  # type: ignore[union-attr]
        if op.kind == "judge":
            return op.target.judge_resize()
        if op.kind == "resize":
            try:
                return op.target.resize()
            except MemoUpdateError as error:
                return self._memory_failed(error)
        return self.manager.save(op.target, durable=op.kind == "save")  # type: ignore[union-attr]

    async def _ado(self, op: _Op) -> Any:
        if op.kind == "fold":
            return await self._afold(op.target)
        if op.kind == "session":
            return self.fixed if self.fixed is not None else await self.manager.aget_or_create(op.target)  # type: ignore[union-attr]
        if op.kind == "judge":
            return await op.target.async_judge_resize()
        if op.kind == "resize":
            try:
                return await op.target.async_resize()
            except MemoUpdateError as error:
                return self._memory_failed(error)
        return await self.manager.asave(op.target, durable=op.kind == "save")  # type: ignore[union-attr]

    def _memory_failed(self, error: MemoUpdateError) -> None:
        if self.on_memory_error == "raise":
            raise error
        log.warning("the memo/summary model failed; the turn goes on and the next resize resumes: %s", error)

