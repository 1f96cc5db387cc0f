"""``Session.search`` from several threads (``asearch`` runs in worker threads): a session's message
index is synced and read by one search at a time, so no message is indexed twice or missed.

Deterministic: the first search is paused inside its sync (the history hands it a message, then
waits); the second search runs while it is paused. The pause ends when the second search either
finished (no lock: it indexed the same messages meanwhile) or is waiting for the session's lock
(reported by the lock itself: the module's ``threading`` is replaced by one whose locks say when
they are contended), never after a fixed time.
"""

from __future__ import annotations

from collections import Counter
import threading
from types import SimpleNamespace
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
import pytest

from session_graph.retrieval import messages as messages_module
from session_graph.retrieval.session_search import search

WAIT = 30  # a bound on a hung test only; every wait below ends on an event


class ReportingLock:
    """A lock that sets ``contended`` when an acquire has to wait."""

    contended = threading.Event()

    def __init__(self) -> None:
        self._lock = threading.Lock()

    def acquire(self, blocking: bool = True, timeout: float = -1) -> bool:
        if self._lock.acquire(blocking=False):
            return True
        ReportingLock.contended.set()
        return self._lock.acquire(blocking, timeout)

    def release(self) -> None:
        self._lock.release()

    def locked(self) -> bool:
        return self._lock.locked()

    def __enter__(self) -> bool:
        return self.acquire()

    def __exit__(self, *exc: Any) -> None:
        self.release()


class PausingHistory(list):  # type: ignore[type-arg]
    """A history that pauses ``paused_thread`` once, when it reads position ``at``."""

    def __init__(self, items: list[BaseMessage]) -> None:
        super().__init__(items)
        self.at = -1
        self.paused_thread: threading.Thread | None = None
        self.paused = threading.Event()
        self.resume = threading.Event()

    def __getitem__(self, index: Any) -> Any:
        if index == self.at and threading.current_thread() is self.paused_thread and not self.paused.is_set():
            self.paused.set()
            assert self.resume.wait(WAIT)
        return super().__getitem__(index)


class FakeSession:
    """What ``search`` reads of a session (``SearchedSession``)."""

    def __init__(self, history: PausingHistory) -> None:
        self.id = "s"
        self.full_chat_history = history
        self.arrived_at: dict[str, str] = {}


def message(n: int) -> BaseMessage:
    return (HumanMessage if n % 2 == 0 else AIMessage)(content=f"apple number {n}", id=f"m{n}")


@pytest.fixture
def reporting(monkeypatch: pytest.MonkeyPatch) -> None:
    ReportingLock.contended.clear()
    monkeypatch.setattr(messages_module, "threading", SimpleNamespace(Lock=ReportingLock))


@pytest.mark.usefixtures("reporting")
def test_two_searches_and_an_append_index_each_message_once() -> None:
    history = PausingHistory([message(n) for n in range(4)])
    session = FakeSession(history)
    assert len(search(session, "apple", k=50)) == 4  # the index now holds 0..3
    history.extend(message(n) for n in range(4, 8))  # appended: the next search indexes 4..7
    history.at = 5
    results: dict[str, list[Any]] = {}

    def first() -> None:
        results["first"] = search(session, "apple", k=50)

    history.paused_thread = paused = threading.Thread(target=first)
    paused.start()
    assert history.paused.wait(WAIT)  # the first search is inside its sync, at message 5
    history.append(message(8))  # another append meanwhile
    done = threading.Event()

    def second() -> None:
        results["second"] = search(session, "apple", k=50)
        done.set()

    other = threading.Thread(target=second)
    other.start()
    woke = threading.Event()  # the second search finished, or waits for the lock: either way, let the first go on
    for event in (done, ReportingLock.contended):
        threading.Thread(target=lambda e=event: e.wait(WAIT) and woke.set(), daemon=True).start()
    assert woke.wait(WAIT)
    history.resume.set()
    paused.join(WAIT)
    other.join(WAIT)
    final = search(session, "apple", k=50)
    for name, hits in [*results.items(), ("after", final)]:
        seen = Counter(hit.seq for hit in hits)
        assert [seq for seq, count in seen.items() if count > 1] == [], name  # no message twice
    assert sorted(hit.seq for hit in final) == list(range(9))  # none missed, the late append included
    assert sorted(hit.seq for hit in results["second"]) == list(range(9))


def fruit(name: str, n: int) -> BaseMessage:
    return (HumanMessage if n % 2 == 0 else AIMessage)(content=f"{name} number {n}", id=f"{name}{n}")


@pytest.mark.usefixtures("reporting")
def test_a_search_racing_a_replaced_history_never_mixes_the_two() -> None:
    """``clear`` or ``restore`` replaces the history; a search still syncing the old one (paused
    inside) must not write the old messages into the index the new history's search built:
    the new history's messages at those positions went missing, the cleared ones were found."""
    old = PausingHistory([fruit("apple", n) for n in range(4)])
    session = FakeSession(old)
    assert len(search(session, "apple", k=50)) == 4
    old.extend(fruit("apple", n) for n in range(4, 8))
    old.at = 5
    results: dict[str, list[Any]] = {}
    old.paused_thread = paused = threading.Thread(target=lambda: results.setdefault("old", search(session, "apple", k=50)))
    paused.start()
    assert old.paused.wait(WAIT)
    session.full_chat_history = PausingHistory([fruit("banana", n) for n in range(9)])  # replaced (clear, restore)
    done = threading.Event()

    def second() -> None:
        results["new"] = search(session, "banana", k=50)
        done.set()

    other = threading.Thread(target=second)
    other.start()
    woke = threading.Event()
    for event in (done, ReportingLock.contended):
        threading.Thread(target=lambda e=event: e.wait(WAIT) and woke.set(), daemon=True).start()
    assert woke.wait(WAIT)
    old.resume.set()
    paused.join(WAIT)
    other.join(WAIT)
    assert sorted(hit.seq for hit in results["new"]) == list(range(9))
    assert sorted(hit.seq for hit in search(session, "banana", k=50)) == list(range(9))  # none missing
    assert search(session, "apple", k=50) == []  # nothing of the replaced history
