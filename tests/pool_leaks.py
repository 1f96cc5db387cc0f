"""A test that leaves a psycopg pool open fails, naming where the pool was opened.

A pool dropped without ``close()`` is closed by its ``__del__`` whenever the garbage collector
runs, often in another test and in one of the pool's own worker threads, where it cannot join
itself ("cannot join current thread": a ``PytestUnraisableExceptionWarning`` in a test that
uses no Postgres at all). So every pool opened during a test is held here until the test's
teardown (its fixtures' finalizers included) has run; one still open then is closed here and
the test errors. Deterministic: nothing waits on the garbage collector. The hooks are imported
by ``conftest.py``.
"""

from __future__ import annotations

import traceback
from typing import Any

import pytest

__all__ = ["pytest_runtest_teardown"]

_opened: list[tuple[Any, str]] = []  # (pool, where it was opened) of the running test


def _where() -> str:
    frames = [f for f in traceback.extract_stack()[:-2] if "psycopg" not in f.filename and __file__ != f.filename]
    return " <- ".join(f"{f.filename.rsplit('/', 2)[-1]}:{f.lineno}" for f in reversed(frames[-4:]))


def _track(cls: Any) -> None:
    original = cls.__init__

    def init(self: Any, *args: Any, **kwargs: Any) -> None:
        original(self, *args, **kwargs)
        _opened.append((self, _where()))

    cls.__init__ = init


try:
    from psycopg_pool import AsyncConnectionPool, ConnectionPool
except ImportError:  # the Postgres extra is not installed: no pool can leak
    pass
else:
    _track(ConnectionPool)
    _track(AsyncConnectionPool)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None) -> Any:
    result = yield
    leaked = [(pool, where) for pool, where in _opened if not pool.closed]
    _opened.clear()
    for pool, _ in leaked:
        if isinstance(pool, ConnectionPool):
            pool.close()
    if leaked:
        pytest.fail(f"{item.nodeid} left {len(leaked)} psycopg pool(s) open (close the store or manager it belongs to): "
                    + "; ".join(where for _, where in leaked), pytrace=False)
    return result
