"""``state.context_of``: a run's ``ResizeContext`` made without the frozen dataclass's per-field
setattr is the context ``ResizeContext(**values)`` makes: equal, frozen, replaceable."""

from __future__ import annotations

import dataclasses

import pytest

from session_graph import Session
from session_graph.resize.state import ResizeContext, context_of


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
