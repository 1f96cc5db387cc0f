"""Every public name, and every public method and property of a public class, has a docstring."""

from __future__ import annotations

from docstrings_util import PACKAGES, undocumented
import pytest


def test_no_public_name_lacks_a_docstring() -> None:
    assert undocumented() == []


def test_the_lister_sees_members_and_inherited_declarations(monkeypatch: pytest.MonkeyPatch) -> None:
    """The lister is not vacuous: an undocumented property of a public class is found."""
    import session_graph

    assert PACKAGES[0] == "session_graph" and "Session" in session_graph.__all__
    monkeypatch.setattr(session_graph.Session, "turns", property(lambda self: 0))
    assert undocumented() == ["session_graph.Session.turns"]


@pytest.mark.parametrize("module", ["session_graph.accounting.counters", "session_graph.llm.names", "session_graph.session"])
def test_the_examples_in_docstrings_run(module: str) -> None:
    import doctest
    import importlib

    result = doctest.testmod(importlib.import_module(module), optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0
