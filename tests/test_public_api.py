"""The public API is declared once, in session_graph/__init__.py, and complete."""

from __future__ import annotations

import session_graph


def test_all_is_sorted_and_every_name_resolves() -> None:
    # ruff's RUF022 order: CONSTANTS, then Classes, then functions, each alphabetical
    assert session_graph.__all__ == sorted(session_graph.__all__, key=lambda n: (not n.isupper(), not n[0].isupper(), n))
    for name in session_graph.__all__:
        assert getattr(session_graph, name) is not None


def test_every_exported_class_and_function_is_documented() -> None:
    undocumented = [
        name for name in session_graph.__all__
        if callable(getattr(session_graph, name)) and not (getattr(session_graph, name).__doc__ or "").strip()
    ]
    assert undocumented == []


def test_errors_form_one_tree() -> None:
    from session_graph import errors

    for name in errors.__all__:
        assert issubclass(getattr(errors, name), session_graph.SessionGraphError)
        assert name in session_graph.__all__
    assert issubclass(session_graph.UnknownResizeTypeError, KeyError)
    assert issubclass(session_graph.PolicyResultError, TypeError)
    assert issubclass(session_graph.DocumentTypeError, TypeError)
