"""A tool result appended off the main thread owes its exact count to the running totals until they are read
(``Ledger.add``: an agent's tool result, recorded in the worker thread LangGraph makes for a run's tools, is
encoded where tiktoken's caches are warm); every reader sees the same exact totals as if it had been counted at once."""

from __future__ import annotations

import os
import threading

from fork_util import fork_while_held, ok
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
import pytest

from session_graph import Session
from session_graph.accounting import window
from session_graph.accounting.tokens import TiktokenCounter, message_tokens

COUNTER = TiktokenCounter("o200k_base")


def _turn(i: int) -> list:
    return [HumanMessage(f"question {i} about the topic", id=f"q{i}"),
            AIMessage("", tool_calls=[{"id": f"c{i}", "name": "lookup", "args": {"topic": f"t{i}"}}], id=f"a{i}"),
            ToolMessage(f"result {i}: " + "facts and figures " * 20, tool_call_id=f"c{i}", name="lookup", id=f"t{i}"),
            AIMessage(f"answer {i}", id=f"r{i}")]


def _in_thread(session: Session, message) -> None:
    worker = threading.Thread(target=session.append_message, args=(message,))
    worker.start()
    worker.join()


def _session() -> Session:
    return Session().configure(limit={"tokens": 100_000})


def test_a_message_appended_in_a_worker_thread_is_counted_when_the_totals_are_read() -> None:
    main, threaded = _session(), _session()
    for i in range(3):
        for message in _turn(i):
            main.append_message(message)
            if isinstance(message, ToolMessage):
                _in_thread(threaded, message)
                assert threaded._ledger._running.owed[-1] is message  # not counted yet (appends add, reads settle)
            else:
                threaded.append_message(message)
    expected = sum(message_tokens(m, COUNTER) for i in range(3) for m in _turn(i))
    assert threaded.window_totals == main.window_totals
    assert threaded.window_totals.tokens == expected
    assert threaded._ledger._running.owed == []


def test_every_reader_settles_what_is_owed() -> None:
    reference = _session()
    for message in _turn(0):
        reference.append_message(message)
    for read in (lambda s: s.judge_resize(), lambda s: s._ledger.running.tokens, lambda s: s.window_totals.tokens):
        session = _session()
        for message in _turn(0)[:2]:
            session.append_message(message)
        _in_thread(session, _turn(0)[2])
        read(session)
        assert session._ledger._running.owed == []
        session.append_message(_turn(0)[3])
        assert session.window_totals == reference.window_totals


def test_the_view_counts_an_owed_message_as_any_other() -> None:
    """The view reads each message's count (not the running totals): an owed one is counted there, once."""
    session, reference = Session().configure(limit={"tokens": 150}), Session().configure(limit={"tokens": 150})
    for message in _turn(0):
        reference.append_message(message)
        if isinstance(message, ToolMessage):
            _in_thread(session, message)
        else:
            session.append_message(message)
    assert session.view() == reference.view()
    assert session.window_totals == reference.window_totals


def test_owed_counts_survive_a_prune_a_counter_swap_and_a_judge_that_resizes() -> None:
    session = Session().configure(limit={"tokens": 400}, every_n_turns=0)
    reference = Session().configure(limit={"tokens": 400}, every_n_turns=0)
    for i in range(12):
        for message in _turn(i):
            reference.append_message(message)
            if isinstance(message, ToolMessage):
                _in_thread(session, message)
            else:
                session.append_message(message)
        assert session.window_totals == reference.window_totals
        if reference.judge_resize() is not None:
            assert session.judge_resize() is not None
            reference.resize()
            session.resize()
        assert session.current_chat_history == reference.current_chat_history
        assert session.window_totals == reference.window_totals
    assert len(session.trace) >= 2  # it pruned
    _in_thread(session, ToolMessage("one more, owed", tool_call_id="c11", id="last"))
    session.set_settings("session.tokens.encoding", "cl100k_base")
    session.judge_resize()
    assert session.window_totals.tokens == sum(message_tokens(m, TiktokenCounter("cl100k_base")) for m in session.current_chat_history)


def test_a_user_counter_is_never_owed_so_its_failure_refuses_the_append() -> None:
    counted: list[str] = []
    session = Session(settings={"session.limit": {"tokens": 1000}}, token_counter=lambda text: counted.append(text) or len(text))
    _in_thread(session, ToolMessage("counted at once", tool_call_id="c", id="x"))
    assert session._ledger._running.owed == [] and "counted at once" in counted


def test_only_a_tool_result_is_owed() -> None:
    """A user's or a model's message appended in a worker thread (a server's thread pool) is counted at once."""
    session = _session()
    _in_thread(session, HumanMessage("a question from a server thread", id="q"))
    _in_thread(session, AIMessage("an answer", id="r"))
    assert session._ledger._running.owed == []


def _blocked_settle(session: Session, owed_message, read):
    """Start ``read(session)`` in a thread and return once its settle is counting ``owed_message``
    (held there until the returned event is set), with the thread."""
    ledger = session._ledger
    count = ledger.tokens
    entered, go = threading.Event(), threading.Event()

    def blocking(message):
        if message is owed_message and threading.current_thread() is not threading.main_thread():
            entered.set()
            go.wait(timeout=5)  # set by the test; the timeout only ends a test that went wrong
        return count(message)

    ledger.tokens = blocking
    reader = threading.Thread(target=read, args=(session,))
    reader.start()
    assert entered.wait(timeout=5)
    return go, reader


def test_a_message_appended_while_another_thread_settles_keeps_its_tokens() -> None:
    """A settle counts an owed message while another thread appends (tiktoken releases the GIL while it
    encodes): the append's tokens, added meanwhile, are not overwritten by the settle's stale sum."""
    session, reference = _session(), _session()
    turn = _turn(0)
    for message in turn[:2]:
        session.append_message(message)
        reference.append_message(message)
    reference.append_message(turn[2])
    _in_thread(session, turn[2])
    go, reader = _blocked_settle(session, turn[2], lambda s: s.window_totals)
    session.append_message(turn[3])  # counted at once, in the main thread, during the settle
    reference.append_message(turn[3])
    go.set()
    reader.join()
    assert session.window_totals == reference.window_totals


def test_a_reader_while_another_thread_settles_waits_for_the_owed_tokens(monkeypatch) -> None:
    """Two readers: the second, arriving while the first still counts an owed message, neither reads
    (nor caches) totals without that message's tokens: it waits for the settle in progress."""
    session, reference = _session(), _session()
    turn = _turn(0)
    for message in turn[:2]:
        session.append_message(message)
        reference.append_message(message)
    reference.append_message(turn[2])
    _in_thread(session, turn[2])
    second, progressed, read = None, threading.Event(), []
    real = window._settle_lock(session._ledger._running)

    class Watched:
        def __enter__(self):
            if threading.current_thread() is second:
                progressed.set()  # the second reader is about to wait for the first's settle
            return real.__enter__()

        def __exit__(self, *exc):
            return real.__exit__(*exc)

    monkeypatch.setattr(window, "_SETTLING", [Watched()] * 16)
    go, first = _blocked_settle(session, turn[2], lambda s: s._ledger.running)  # the judge's read

    def read_totals() -> None:
        read.append(session.window_totals)
        progressed.set()

    second = threading.Thread(target=read_totals)
    second.start()
    progressed.wait()
    go.set()
    first.join()
    second.join()
    assert read == [reference.window_totals]
    assert session.window_totals == reference.window_totals


def test_what_is_owed_stays_bounded_when_nothing_reads_the_totals() -> None:
    """A recorder whose tool results all arrive in worker threads and that never judges: the debt is
    bounded (a later read encodes a few messages, not the whole history's tool results)."""
    session, reference = _session(), _session()

    def record() -> None:
        for i in range(300):
            message = ToolMessage(f"result {i}", tool_call_id=f"c{i}", id=f"t{i}")
            session.append_message(message)
            reference_messages.append(message)

    reference_messages: list = []
    worker = threading.Thread(target=record)
    worker.start()
    worker.join()
    assert len(session._ledger._running.owed) <= 64
    for message in reference_messages:
        reference.append_message(message)
    assert session.window_totals == reference.window_totals


def test_a_child_forked_while_another_thread_settles_can_settle() -> None:
    """``os.fork`` while a thread is in a settle (holding the settle lock): the child's sessions still
    read their totals (the lock is made anew in the child, not left held by a thread it has not got)."""
    if not hasattr(os, "fork"):
        pytest.skip("no os.fork here")
    session, reference = _session(), _session()
    turn = _turn(0)
    for message in turn:
        reference.append_message(message)
    for message in turn[:2]:
        session.append_message(message)
    _in_thread(session, turn[2])

    def child() -> None:
        session.append_message(turn[3])
        assert session.window_totals == reference.window_totals  # settles what the parent's worker left owed

    assert ok(fork_while_held(window._settle_lock(session._ledger._running), child))
