"""A run's ``ResizeContext`` (``state.context_of``) and its ``TraceRecord`` (``trace.record_of``),
made without the frozen dataclasses' per-field setattr, are what their classes make: equal,
frozen, replaceable; given some fields only, the classes make them (defaults, errors)."""

from __future__ import annotations

import dataclasses

import pytest

from session_graph import Session
from session_graph.resize.state import ResizeContext, context_of
from session_graph.resize.trace import TraceRecord, record_of


def test_a_run_context_is_the_dataclass_one() -> None:
    session = Session("s").configure(limit={"tokens": 4000})
    made = session.handlers.context("lite", session.state, session._core.ledger, session.state.settings.resolved())
    values = {f.name: getattr(made, f.name) for f in dataclasses.fields(ResizeContext)}
    assert type(made) is ResizeContext and made == ResizeContext(**values) == context_of(**values)
    with pytest.raises(dataclasses.FrozenInstanceError):
        made.force = False  # type: ignore[misc]
    assert dataclasses.replace(made, force=True).force is True and made.force == "lite"


def test_some_fields_take_the_dataclass_defaults() -> None:
    assert context_of(force=True) == ResizeContext(force=True)
    with pytest.raises(TypeError):
        context_of(force=True, not_a_field=1)


def test_a_resize_record_is_the_dataclass_one() -> None:
    session = Session("s").use_lite(messages=6)
    for i in range(12):
        session.append_message({"role": "user" if i % 2 == 0 else "assistant", "content": f"message {i}"})
    session.resize()
    made = session.trace[-1]
    values = {f.name: getattr(made, f.name) for f in dataclasses.fields(TraceRecord)}
    assert type(made) is TraceRecord and made == TraceRecord(**values) == record_of(**values)
    assert hash(made) == hash(TraceRecord(**values)) and made.route == ("judge", "lite_prune")
    with pytest.raises(dataclasses.FrozenInstanceError):
        made.seq = 0  # type: ignore[misc]
    assert dataclasses.replace(made, seq=99).seq == 99
    with pytest.raises(TypeError):
        record_of(seq=1)  # the class's own error: fields missing
