"""``direct.unobserved``: whether any callback would see a resize run (else it runs without Pregel).

Its answer is ``CallbackManager.configure``'s (no handler in the manager it makes); every source
of a handler is switched on here in turn, and the answer must be configure's each time.
"""

from __future__ import annotations

from collections.abc import Iterator
import contextlib
from contextvars import ContextVar
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
            assert direct.unobserved() == _configured() is False, name
    monkeypatch.setenv("LANGCHAIN_TRACING", "true")  # v1 tracing: configure raises, and unobserved with it
    with pytest.raises(RuntimeError):
        direct.unobserved()
    monkeypatch.delenv("LANGCHAIN_TRACING")
    assert direct.unobserved()
