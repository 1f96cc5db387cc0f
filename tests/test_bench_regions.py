"""Every bench has its README region and run_all rewrites only what is between the markers."""

from __future__ import annotations

import importlib.util
from pathlib import Path
import re
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


_FIGURE = re.compile(r"(?<![<>]= )(?<![\w.])\d[\d,]*(?:\.\d+)?(?: ?(?:x|ms|us|µs)\b)"
                     r"|recall@\d+[^.\n]{0,40}?\b[01]\.\d\d|share (?:of )?[01]\.\d\d"
                     r"|^\|(?:[^|\n]*\|)*?\s*\d[\d,./]*\s*\|(?:[^|\n]*\|)*?\s*\d[\d,./]*\s*\|.*$", re.M)  # a table of counts


def stated_figures(text: str) -> list[str]:
    """Measured-looking figures (a ratio, a time, a recall, a share, a table of counts) in ``text`` outside the bench
    regions; a goal stated with ``<=`` or ``>=`` is not one."""
    return [m.group(0) for m in _FIGURE.finditer(run_all()._REGION.sub("", text))]


def test_the_readme_states_no_measured_figure_outside_the_bench_regions() -> None:
    """Figures typed into prose go stale: say it qualitatively and point at the region that prints it."""
    found = stated_figures((ROOT / "README.md").read_text())
    assert not found, f"README prose states measured figures {found}; move them into a bench region (bench/run_all.py)"


def test_the_figure_check_catches_hand_written_figures_and_spares_goals_and_regions() -> None:
    text = ("a save costs 1.02x the CPU, a query 0.56 ms; recall@5 on 100 restated memories: 1.00; "
            "duplicate share 0.24 (goal: <= 1.2x)\n| memo | 4 | 1 | 10/12 |\n| `x` | `0.8` | a default |\n<!-- bench:a -->\n3.5x 4 ms\n<!-- /bench:a -->\n")
    assert stated_figures(text) == ["1.02x", "0.56 ms", "recall@5 on 100 restated memories: 1.00", "share 0.24",
                                   "| memo | 4 | 1 | 10/12 |"]
