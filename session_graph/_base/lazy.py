"""A module imported on first use, so that ``import session_graph`` stays light.

``np = lazy_module("numpy")`` at the top of a module (with ``import numpy as np`` under
``TYPE_CHECKING`` for the type checker) reads like an ordinary import, but numpy is imported only
when an attribute is first read, by the first search that needs it.
"""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import Any

__all__ = ["lazy_module"]


class _LazyModule:
    __slots__ = ("_module", "_name")

    def __init__(self, name: str) -> None:
        self._name = name
        self._module: ModuleType | None = None

    def __getattr__(self, attribute: str) -> Any:
        module = self._module
        if module is None:
            module = self._module = importlib.import_module(self._name)
        return getattr(module, attribute)

    def __repr__(self) -> str:
        return f"<module {self._name!r}, imported on first use>"


def lazy_module(name: str) -> Any:
    """A stand-in for module ``name`` that imports it when an attribute is first read."""
    return _LazyModule(name)
