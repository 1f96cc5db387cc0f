"""Lists the public names without a docstring: every name of ``session_graph.__all__`` and of
the public packages (``stores``, ``memory``, ``integrations``), and the public methods and
properties of every class among them. ``python tests/docstrings_util.py`` prints them."""

from __future__ import annotations

import importlib
import inspect
from typing import Any

PACKAGES = ("session_graph", "session_graph.stores", "session_graph.memory", "session_graph.integrations")


def _doc(member: Any) -> str:
    if isinstance(member, property):
        return (member.__doc__ or (member.fget.__doc__ if member.fget else "") or "").strip()
    if isinstance(member, classmethod | staticmethod):
        member = member.__func__
    return (getattr(member, "__doc__", None) or "").strip()


def _members(klass: type) -> list[str]:
    """Public methods and properties of ``klass`` whose effective definition is this package's, undocumented."""
    missing = []
    fields = set(getattr(klass, "__dataclass_fields__", {}))  # fields are documented in the class's Attributes
    names = {name for base in klass.__mro__ for name in vars(base) if not name.startswith("_")} - fields
    for name in sorted(names):
        owner = next(base for base in klass.__mro__ if name in vars(base))
        member = vars(owner)[name]
        if not owner.__module__.startswith("session_graph"):
            continue  # inherited from langchain, langgraph, pydantic...: theirs to document
        if not (inspect.isfunction(member) or isinstance(member, property | classmethod | staticmethod)):
            continue
        if _doc(member):
            continue
        declared = [vars(base)[name] for base in klass.__mro__ if name in vars(base) and base is not owner]
        if any(_doc(other) for other in declared):
            continue  # documented where it is declared (a protocol or base class)
        missing.append(name)
    return missing


def undocumented() -> list[str]:
    """``module.Name`` and ``module.Class.member`` for each public name without a docstring."""
    missing: list[str] = []
    seen: set[int] = set()
    for package in PACKAGES:
        module = importlib.import_module(package)
        for name in module.__all__:
            value = getattr(module, name)
            if id(value) in seen or not callable(value):
                continue  # constants and aliases are documented where they are declared
            seen.add(id(value))
            if not _doc(value) or (inspect.isclass(value) and value.__doc__ == getattr(value.__mro__[1], "__doc__", None)
                                   and value.__mro__[1] is not object and not value.__module__.startswith("typing")):
                missing.append(f"{package}.{name}")
            if inspect.isclass(value):
                missing += [f"{package}.{name}.{member}" for member in _members(value)]
    return sorted(set(missing))


if __name__ == "__main__":
    for entry in undocumented():
        print(entry)
