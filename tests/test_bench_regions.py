"""Every bench has its README region and run_all rewrites only what is between the markers."""

from __future__ import annotations

import importlib.util
from pathlib import Path
import sys

ROOT = Path(__file__).resolve().parent.parent


def run_all():
    spec = importlib.util.spec_from_file_location("run_all", ROOT / "bench" / "run_all.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("run_all", module)  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def test_every_bench_has_a_readme_region_and_every_region_a_bench() -> None:
    module = run_all()
    assert module.check((ROOT / "README.md").read_text()) == []
    assert all((ROOT / "bench" / bench.script).is_file() for bench in module.BENCHES)


def test_a_rewrite_replaces_one_region_and_keeps_the_rest() -> None:
    module = run_all()
    text = "intro 1.5x\n<!-- bench:a -->\nold a\n<!-- /bench:a -->\nmiddle\n<!-- bench:b -->\nold b\n<!-- /bench:b -->\n"
    out = module.rewrite(text, "a", "new a 2.0x\n")
    assert out == "intro 1.5x\n<!-- bench:a -->\nnew a 2.0x\n<!-- /bench:a -->\nmiddle\n<!-- bench:b -->\nold b\n<!-- /bench:b -->\n"
    assert module.check(text + "<!-- bench:a -->\n<!-- /bench:a -->\n")  # a region twice, unknown regions: reported
