"""The bench modules loaded from the checkout's ``bench/`` folder, for the tests of what they time."""

from __future__ import annotations

import importlib.util
from pathlib import Path
import sys
from types import ModuleType

BENCH = Path(__file__).resolve().parents[1] / "bench"


def load_bench(name: str) -> ModuleType:
    """``bench/<name>.py`` as a module (benches import each other by name, ``bench_agents``,
    ``bench_tokens``, ``bench_turn``: so ``bench/`` is on the path while it loads)."""
    sys.path.insert(0, str(BENCH))
    try:
        spec = importlib.util.spec_from_file_location(name, BENCH / f"{name}.py")
        module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
        spec.loader.exec_module(module)  # type: ignore[union-attr]
        return module
    finally:
        sys.path.remove(str(BENCH))


def load_bench_turn() -> ModuleType:
    """``bench/bench_turn.py`` as a module."""
    return load_bench("bench_turn")
