"""``SESSION_GRAPH_RESIZE_EXECUTOR``: a value written loosely still forces Pregel, and one that names
no executor is an error naming the variable and its values (it was ignored: a user debugging
with a typo believed every resize ran through Pregel while they ran without it)."""

from __future__ import annotations

from typing import Any

import pytest
from resize_util import pruning

from session_graph import ConfigurationError, Session
from session_graph.resize.direct import FORCE_PREGEL_ENV, select


def _plan(session: Session) -> Any:
    return select(session.handlers.runner(session._state.settings.resolved(), sync=True, start="lite"), session.handlers, sync=True)


@pytest.mark.parametrize("value", ["pregel", "Pregel", " pregel\n", "PREGEL "])
def test_the_switch_forces_pregel_however_it_is_cased_or_spaced(value: str, monkeypatch: pytest.MonkeyPatch) -> None:
    session = pruning(Session().use_lite(messages=6))
    monkeypatch.setenv(FORCE_PREGEL_ENV, value)
    assert _plan(session) is None


@pytest.mark.parametrize("value", ["", "auto"])
def test_unset_empty_or_auto_is_the_default_choice(value: str, monkeypatch: pytest.MonkeyPatch) -> None:
    session = pruning(Session().use_lite(messages=6))
    monkeypatch.setenv(FORCE_PREGEL_ENV, value)
    assert _plan(session) is not None


@pytest.mark.parametrize("value", ["pregle", "direct", "1", "true"])
def test_a_value_that_names_no_executor_is_an_error_and_the_session_stays(value: str, monkeypatch: pytest.MonkeyPatch) -> None:
    session = pruning(Session().use_lite(messages=6))
    window = [m.id for m in session.current_chat_history]
    monkeypatch.setenv(FORCE_PREGEL_ENV, value)
    with pytest.raises(ConfigurationError, match=rf"{FORCE_PREGEL_ENV}={value!r}.*'pregel'.*unset"):
        session.resize()
    assert [m.id for m in session.current_chat_history] == window
