"""Forking while another thread holds a lock: the shared harness of the real-fork tests."""

from __future__ import annotations

from collections.abc import Callable
import os
import signal
import threading
from typing import Any


def fork_while_held(hold: Any, child: Callable[[], None]) -> int:
    """Fork while a thread holds ``hold``; the child runs ``child`` (15 s at most), the parent
    returns the child's exit status."""
    taken, done = threading.Event(), threading.Event()

    def holder() -> None:
        with hold:
            taken.set()
            done.wait(30)

    thread = threading.Thread(target=holder)
    thread.start()
    assert taken.wait(10)
    pid = os.fork()
    if pid == 0:  # the child: only this thread exists; a lock the holder had stays locked here
        signal.alarm(15)  # a deadlock ends the child (the parent sees the signal), never the test run
        code = 1
        try:
            child()
            code = 0
        finally:
            os._exit(code)
    done.set()
    thread.join()
    _, status = os.waitpid(pid, 0)
    return status


def ok(status: int) -> bool:
    """Whether the child exited, with status 0."""
    return os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0
