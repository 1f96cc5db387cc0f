"""The facade (``session_graph/session.py``): every public method and property of ``Session`` keeps its
signature, and ``help(Session)`` shows each with its real signature and docstring, whether it is defined
in the class or taken by name from its concept's package (``commit = session_commit.commit``)."""

from __future__ import annotations

import inspect
import json
from pathlib import Path
import pydoc
from typing import Any

from langchain_core.messages import AIMessage

from session_graph import Session
from session_graph.commit import session_commit
from session_graph.interop import session_export

SNAPSHOT = Path(__file__).resolve().parent / "snapshots" / "session_api.json"
DUNDERS = ("__init__", "__contains__", "__repr__")


def public_api() -> dict[str, str]:
    """Each public member as ``kind async (parameters after self) -> return``; a taken function's
    ``SessionT`` (its self type, bound to the session) reads as ``Self``, which it is for ``Session``."""
    out: dict[str, str] = {}
    for name in sorted(dir(Session)):
        if name.startswith("_") and name not in (*DUNDERS, "_repr_html_"):
            continue
        attr = inspect.getattr_static(Session, name)
        if isinstance(attr, property):
            out[name] = "property" + ("+setter" if attr.fset else "")
            continue
        function = getattr(Session, name)
        signature = inspect.signature(function)
        params = [p for p in signature.parameters.values()]
        if params and params[0].name == "self":
            params = params[1:]
        text = f"{type(attr).__name__} {inspect.iscoroutinefunction(function)} ({', '.join(str(p) for p in params)})"
        out[name] = f"{text} -> {signature.return_annotation}".replace("SessionT", "Self")
    return out


def test_every_public_member_keeps_its_signature() -> None:
    assert public_api() == json.loads(SNAPSHOT.read_text(encoding="utf-8"))


def test_help_shows_every_method_with_its_signature_and_docstring() -> None:
    text = pydoc.render_doc(Session, renderer=pydoc.plaintext)
    for name in public_api():  # pydoc lists no _private name (_repr_html_): the others must all be there
        member = inspect.getattr_static(Session, name)
        doc = inspect.getdoc(member.fget if isinstance(member, property) else getattr(Session, name))
        assert doc, name
        if name.startswith("_"):
            continue
        assert doc.splitlines()[0] in text, name
        if not isinstance(member, property):
            head = f"{name}(self" if not isinstance(member, classmethod) else f"{name}(value"
            assert head in text, name


def test_a_taken_function_is_the_package_s_own_and_binds_as_a_method() -> None:
    assert Session.commit is session_commit.commit and Session.to_json is session_export.to_json
    session = Session(id="s1")
    bound: Any = session.to_json
    assert bound.__self__ is session and json.loads(bound())["id"] == "s1"
    session.add_message("assistant", [{"type": "text", "text": "hi"}])
    assert isinstance(session.full_chat_history[-1], AIMessage) and session.turns == 1
