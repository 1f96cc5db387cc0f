"""The layout, checked from the code's imports (issue 21; ARCHITECTURE.md describes it).

Every module's imports are read with ``ast``, including imports inside functions and under
``TYPE_CHECKING``: a lazy import that only hides a cycle is still a cycle. Asserted: no import
cycle between modules or between packages, every import points down the declared layer order,
the package root stays small, modules stay short, and ``import session_graph`` loads no optional
dependency.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable
from functools import cache
from pathlib import Path
import subprocess
import sys

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "session_graph"

# Lowest first. A unit is a subpackage (``resize``) or a module of the package root (``session``);
# ``__init__`` is the package's own __init__ (the public API). A unit may import units on lower
# layers only; units on the same layer do not import each other.
LAYERS: list[list[str]] = [
    ["errors", "settings_schema"],
    ["_base"],
    ["llm"],
    ["messages", "settings"],
    ["retrieval"],  # imports only errors (and llm for a model reranker): memory and stores both build on it
    ["accounting"],
    ["display"],
    ["compression"],
    ["resize"],
    ["memory"],
    ["interop"],
    ["commit"],
    ["session"],
    ["stores"],
    ["integrations"],
    ["demo"],
    ["cli"],
    ["__main__"],
    ["__init__"],
]
MAX_ROOT_MODULES = 12
MAX_LINES = 400
# Over MAX_LINES on purpose, each for the reason given. Do not add to this list without one
# (stores/jsonl.py, stores/manager.py and session.py were here until they were split by concept).
LONG_MODULES: dict[str, str] = {}
OPTIONAL = ("matplotlib", "langchain", "psycopg", "psycopg_pool")
# Not loaded by ``import session_graph`` either: optional extras, and numpy (a dependency, but only
# the search indexes use it, so it is imported where an index is first used; bench/bench_import.py).
NOT_AT_IMPORT = (*OPTIONAL, "numpy")


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


@cache
def modules() -> dict[str, Path]:
    return {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def imported(name: str, path: Path) -> set[str]:
    """The package's modules that ``name`` imports, anywhere in its body."""
    known = modules()
    is_package = path.name == "__init__.py"
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = name.split(".") if is_package else name.split(".")[:-1]
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join([*anchor, base] if base else anchor)
            targets = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base for alias in node.names]
        for target in targets:
            while target and target not in known:  # import a.b.c -> the deepest module that exists
                target = target.rpartition(".")[0]
            if target.startswith("session_graph") and target != name:
                found.add(target)
    return found


@cache
def graph() -> dict[str, set[str]]:
    return {name: imported(name, path) for name, path in modules().items()}


def unit(module: str) -> str:
    parts = module.split(".")
    if len(parts) == 1:
        return "__init__"
    return parts[1]


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one member (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in edges.get(node, ()):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(edges):
        if node not in index:
            visit(node)
    return found


def unit_edges() -> dict[str, set[tuple[str, str]]]:
    """unit -> {(importing module, imported module)} across units."""
    out: dict[str, set[tuple[str, str]]] = {}
    for source, targets in graph().items():
        for target in targets:
            if unit(source) != unit(target):
                out.setdefault(unit(source), set()).add((source, target))
    return out


def _rank() -> dict[str, int]:
    return {name: level for level, names in enumerate(LAYERS) for name in names}


def upward_imports() -> list[str]:
    rank = _rank()
    bad = []
    for pairs in unit_edges().values():
        for source, target in sorted(pairs):
            if rank[unit(target)] >= rank[unit(source)]:
                bad.append(f"{source} imports {target} ({unit(source)} may not import {unit(target)})")
    return bad


def test_the_checker_sees_lazy_imports_and_cycles() -> None:
    """The checks below are not vacuous: imports inside functions count, and a cycle is found."""
    assert "session_graph.demo" in graph()["session_graph.cli"]  # cli imports the demo inside functions only
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_every_unit_has_a_layer() -> None:
    units = {unit(name) for name in modules()}
    assert sorted(units - set(_rank())) == [], "add the new package or root module to LAYERS"


def test_no_import_cycle_between_modules() -> None:
    assert cycles(graph()) == []


def test_no_import_cycle_between_packages() -> None:
    edges = {u: {unit(t) for _, t in pairs} for u, pairs in unit_edges().items()}
    assert cycles(edges) == []


def test_imports_point_down_the_layers() -> None:
    assert upward_imports() == []


def test_the_package_root_stays_small() -> None:
    root = sorted(p.name for p in PACKAGE.glob("*.py"))
    assert len(root) <= MAX_ROOT_MODULES, root


def long_modules() -> dict[str, int]:
    out = {}
    for path in modules().values():
        lines = len(path.read_text(encoding="utf-8").splitlines())
        if lines > MAX_LINES:
            out[path.relative_to(PACKAGE).as_posix()] = lines
    return out


def test_modules_stay_short() -> None:
    over = long_modules()
    assert sorted(set(over) - set(LONG_MODULES)) == [], over


def test_the_exception_list_holds_only_long_modules() -> None:
    assert sorted(set(LONG_MODULES) - set(long_modules())) == [], "a module got short: drop it from LONG_MODULES"


def test_every_package_says_what_it_owns() -> None:
    for path in PACKAGE.rglob("__init__.py"):
        assert ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))), path


def _run(code: str) -> str:
    # -I: no user site and no cwd on sys.path, so this checks the tree under test, not an installed copy
    done = subprocess.run([sys.executable, "-c", f"import sys; sys.path.insert(0, {str(PACKAGE.parent)!r})\n{code}"],
                          capture_output=True, text=True, cwd=PACKAGE.parent, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_import_session_graph_loads_no_optional_dependency() -> None:
    out = _run(f"import session_graph, sys\nprint(sorted(m for m in sys.modules if m.split('.')[0] in {NOT_AT_IMPORT!r}))")
    assert out.strip() == "[]"


def test_numpy_is_loaded_where_an_index_is_first_used() -> None:
    """The lazy import is not a way to lose numpy: the first search loads it, and ranks with it."""
    out = _run("import session_graph, sys\nfrom session_graph import Session\nassert 'numpy' not in sys.modules\n"
               "s = Session()\ns.append_message({'role': 'user', 'content': 'green tea please'})\n"
               "s.append_message({'role': 'user', 'content': 'black coffee'})\n"
               "print([h.seq for h in s.search('tea')], 'numpy' in sys.modules)")
    assert out.strip() == "[0] True"


def test_every_module_imports_from_this_tree() -> None:
    """A stale old-layout import must fail, not load a module from another installed copy."""
    names: Iterable[str] = sorted(modules())
    out = _run(
        "import importlib, sys\n"
        f"for name in {list(names)!r}:\n"
        "    if name.endswith('__main__'): continue\n"
        "    try:\n"
        "        importlib.import_module(name)\n"
        "    except ModuleNotFoundError as error:  # an optional extra not installed: that module is not checked\n"
        f"        if (error.name or '').split('.')[0] not in {OPTIONAL!r}: raise\n"
        "print('\\n'.join(sorted(f'{n} {m.__file__}' for n, m in sys.modules.items() if n.split('.')[0] == 'session_graph')))"
    )
    strays = [line for line in out.splitlines() if not line.split(" ", 1)[1].startswith(str(PACKAGE))]
    assert strays == []


if __name__ == "__main__":  # python3 tests/test_architecture.py: the measurements, for a report
    print("module cycles:", cycles(graph()))
    print("package cycles:", cycles({u: {unit(t) for _, t in p} for u, p in unit_edges().items()}))
    print("upward imports:", *upward_imports(), sep="\n  ")
    print("root modules:", len(list(PACKAGE.glob("*.py"))))
    print("modules over", MAX_LINES, "lines:", long_modules())
    pytest.main([__file__, "-q"])
