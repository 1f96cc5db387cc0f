"""Two checkouts' ``session_graph`` in one process, for the A/B benches' ``--baseline``.

``load(root)`` imports the package of the checkout at ``root`` afresh (every ``session_graph``
module dropped from ``sys.modules`` first) and returns its modules by name; ``use(modules)``
swaps a loaded tree back in before its batch, so code that imports lazily finds its own tree's
modules. ``extra`` names modules to import with the package (optional ones may be missing: a
tree from before they existed). ``roots(baseline)`` names the checkouts a ``--baseline`` bench times.
"""

from __future__ import annotations

import contextlib
import importlib
from pathlib import Path
import sys
from types import ModuleType

__all__ = ["HERE", "load", "ours", "roots", "use"]

HERE = str(Path(__file__).resolve().parents[1])  # this checkout's root


def ours() -> list[str]:
    """The names of the ``session_graph`` modules imported now."""
    return [k for k in sys.modules if k == "session_graph" or k.startswith("session_graph.")]


def load(root: str, *extra: str, optional: tuple[str, ...] = ()) -> dict[str, ModuleType]:
    """The ``session_graph`` of the checkout at ``root``: its modules, imported afresh."""
    for name in ours():
        del sys.modules[name]
    sys.path.insert(0, root)
    try:
        package = importlib.import_module("session_graph")
        for name in extra:
            importlib.import_module(name)
        for name in optional:
            with contextlib.suppress(ModuleNotFoundError):
                importlib.import_module(name)
    finally:
        sys.path.remove(root)
    if not str(package.__file__).startswith(root):
        raise SystemExit(f"{root} has no session_graph package (found {package.__file__})")
    return {name: sys.modules[name] for name in ours()}


def use(modules: dict[str, ModuleType]) -> None:
    """Make ``modules`` (a tree ``load`` returned) the imported ``session_graph``."""
    for name in ours():
        del sys.modules[name]
    sys.modules.update(modules)


def roots(baseline: str | None) -> dict[str, str]:
    """The checkouts an A/B bench times, by label: ``baseline`` (another checkout's root, when
    given) as "baseline", then this one as "this tree"."""
    return ({"baseline": str(Path(baseline).resolve())} if baseline else {}) | {"this tree": HERE}
