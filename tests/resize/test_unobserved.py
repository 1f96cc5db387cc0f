"""``direct.unobserved``: whether any callback would see a resize run (else it runs without Pregel).

Its answer is ``CallbackManager.configure``'s (no handler in the manager it makes), read without
building one when nothing is on (``_nothing_on``, a mirror of what ``configure`` reads); every
source of a handler is switched on here in turn, and the answer must be configure's each time.
"""

from __future__ import annotations

from collections.abc import Iterator
import contextlib
from contextvars import ContextVar
import subprocess
import sys
import types
from typing import Any
from unittest.mock import MagicMock

from langchain_core.callbacks import BaseCallbackHandler, CallbackManager
from langchain_core.globals import set_debug
from langchain_core.runnables.config import var_child_runnable_config
from langchain_core.tracers.context import _configure_hooks, register_configure_hook, tracing_v2_enabled
import pytest

from session_graph.resize import direct


class _Seen(BaseCallbackHandler):
    pass


def _under(callbacks: Any) -> bool:
    token = var_child_runnable_config.set({"callbacks": callbacks, "configurable": {}})
    try:
        return direct.unobserved()
    finally:
        var_child_runnable_config.reset(token)


def _configured() -> bool:
    manager = CallbackManager.configure()
    return not manager.handlers and not manager.inheritable_handlers


def test_an_enclosing_manager_observes_by_its_handlers_only() -> None:
    empty = CallbackManager(handlers=[], tags=["agent"], metadata={"thread_id": "t"})  # an agent's run: tags, metadata, no handler
    assert _under(empty) and _under([]) and _under(None)
    assert not _under(CallbackManager(handlers=[_Seen()]))
    assert not _under(CallbackManager(handlers=[], inheritable_handlers=[_Seen()]))
    assert not _under([_Seen()])
    with tracing_v2_enabled(project_name="never-sent", client=MagicMock()):  # the tracing context, whatever the manager holds
        assert not _under(empty)


@contextlib.contextmanager
def _debug() -> Iterator[None]:
    set_debug(True)
    try:
        yield
    finally:
        set_debug(False)


@contextlib.contextmanager
def _hook_var() -> Iterator[None]:
    var: ContextVar[Any] = ContextVar("session_graph_test_hook", default=None)
    register_configure_hook(var, inheritable=True)
    token = var.set(_Seen())
    try:
        yield
    finally:
        var.reset(token)
        _configure_hooks.pop()


@contextlib.contextmanager
def _hook_env(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    var: ContextVar[Any] = ContextVar("session_graph_test_env_hook", default=None)
    register_configure_hook(var, inheritable=True, handle_class=_Seen, env_var="SESSION_GRAPH_TEST_HOOK")
    monkeypatch.setenv("SESSION_GRAPH_TEST_HOOK", "true")
    try:
        yield
    finally:
        monkeypatch.delenv("SESSION_GRAPH_TEST_HOOK")
        _configure_hooks.pop()


def test_the_mirror_is_used_with_this_langchain_core() -> None:
    if not direct._QUIET_READS:  # unobserved() asks configure every time: right, only slower (~7 us a resize)
        pytest.skip("langchain-core's _configure reads other names than direct._CONFIGURE_READS: check "
                    "direct._nothing_on against it and update the names, or every resize asks configure")
    assert direct.unobserved() and _configured() and direct._nothing_on()


def test_every_source_of_a_handler_is_seen_as_configure_sees_it(monkeypatch: pytest.MonkeyPatch) -> None:
    assert direct.unobserved() and _configured()
    sources = {
        "debug": _debug(),
        "tracing": tracing_v2_enabled(project_name="never-sent", client=MagicMock()),
        "a hook's variable": _hook_var(),
        "a hook's environment variable": _hook_env(monkeypatch),
    }
    for name, source in sources.items():
        with source:
            assert not direct._nothing_on(), name
            assert direct.unobserved() == _configured() is False, name
    monkeypatch.setenv("LANGCHAIN_TRACING", "true")  # v1 tracing: configure raises, and unobserved with it
    assert not direct._nothing_on()
    with pytest.raises(RuntimeError):
        direct.unobserved()
    monkeypatch.delenv("LANGCHAIN_TRACING")
    assert direct.unobserved()


def test_another_configure_is_asked_every_time(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(direct, "_QUIET_READS", False)
    asked: list[bool] = []
    real = CallbackManager.configure

    def configure(*args: Any, **kwargs: Any) -> Any:
        asked.append(True)
        return real(*args, **kwargs)

    monkeypatch.setattr(CallbackManager, "configure", configure)
    assert direct.unobserved() and asked == [True]


_WITHOUT_GET_DEBUG = """
import types
import langchain_core.callbacks.manager as manager
# a langchain-core whose manager module has no _get_debug (renamed, inlined): configure still works
real = manager._configure
manager._configure = types.FunctionType(real.__code__, dict(vars(manager)), "_configure", real.__defaults__, real.__closure__)
manager._configure.__kwdefaults__ = real.__kwdefaults__
del manager._get_debug
from langchain_core.callbacks import CallbackManager
from session_graph import Session
from session_graph.resize import direct
assert not CallbackManager.configure().handlers
assert not direct._QUIET_READS and direct.unobserved() is True
session = Session("s").use_lite(messages=6)
for i in range(12):
    session.append_message({"role": "user" if i % 2 == 0 else "assistant", "content": f"message {i}"})
assert len(session.resize()) <= 6
print("ok")
"""


def test_a_langchain_core_without_the_private_names_still_imports() -> None:
    # the mirror reads private langchain-core names; a version without one must fall back to
    # configure (as a changed _configure does), not make `import session_graph` fail
    done = subprocess.run([sys.executable, "-c", _WITHOUT_GET_DEBUG], capture_output=True, text=True, check=False)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr[-2000:]


def test_the_guard_reads_the_names_of_configure_nested_code_too() -> None:
    # Python 3.12 inlines list comprehensions (PEP 709): a name read inside one (``_configure``'s
    # copy_with_metadata_defaults) moves into the function's own co_names, so a guard reading
    # co_names alone never matched there (every resize slow); and a change inside a generator
    # expression (a new handler check) went unseen on 3.11. Both readings must give one set.
    real = direct._configure
    assert direct._quiet_reads(real)
    flat = types.FunctionType(real.__code__.replace(co_names=(*real.__code__.co_names, "copy_with_metadata_defaults")),
                              real.__globals__)  # what 3.12's inlined comprehension reads
    assert direct._quiet_reads(flat)
    inner = next(c for c in real.__code__.co_consts if isinstance(c, types.CodeType) and "handlers" not in c.co_names)
    changed = real.__code__.replace(co_consts=tuple(
        inner.replace(co_names=(*inner.co_names, "new_handler_source")) if c is inner else c for c in real.__code__.co_consts))
    assert not direct._quiet_reads(types.FunctionType(changed, real.__globals__))
