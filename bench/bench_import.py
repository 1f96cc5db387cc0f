"""CPU time of ``import session_graph``: this tree against a baseline tree, in fresh processes.

Run: ``git archive <commit> session_graph | tar -x -C /tmp/base`` then
``PYTHONPATH=. python3 bench/bench_import.py --baseline /tmp/base [--baseline /tmp/other] [--runs 11]``.

Each run is a new interpreter that puts one tree first on ``sys.path`` and times only the import
(``time.process_time()`` around ``import session_graph``: CPU, so the shared machine's load counts
less; interpreter start-up is not timed). Runs alternate the trees (the order reversed every other
round); the medians and each tree's ratio to the first baseline are printed, with the 1-minute load average before and after, and which heavy or
optional top-level packages the import loaded.
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path
import statistics
import subprocess
import sys
import tempfile

ROOT = Path(__file__).resolve().parent.parent
WATCHED = ("numpy", "matplotlib", "langchain", "psycopg", "psycopg_pool", "yaml", "tiktoken", "langgraph", "pydantic")
CHILD = """
import sys, time
sys.path.insert(0, {tree!r})
start = time.process_time()
import session_graph
took = time.process_time() - start
assert session_graph.__file__.startswith({tree!r}), session_graph.__file__
import json
print(json.dumps([took, sorted(m for m in sys.modules if m.split('.')[0] in {watched!r} and '.' not in m)]))
"""


def one_run(tree: Path) -> tuple[float, list[str]]:
    code = CHILD.format(tree=str(tree), watched=WATCHED)
    with tempfile.TemporaryDirectory() as cwd:  # no stray session_graph from the working directory
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=cwd, check=True)
    took, loaded = json.loads(done.stdout.strip().splitlines()[-1])
    return float(took), list(loaded)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", required=True, type=Path, action="append",
                        help="a directory holding a baseline's session_graph/ (repeat for several; the first is the reference)")
    parser.add_argument("--runs", type=int, default=11, help="runs per tree (alternated), >= 9 for a median worth reading")
    args = parser.parse_args()
    trees = {f"baseline {i + 1}" if len(args.baseline) > 1 else "baseline": path.resolve() for i, path in enumerate(args.baseline)}
    trees["this tree"] = ROOT
    reference = next(iter(trees))
    times: dict[str, list[float]] = {name: [] for name in trees}
    loaded: dict[str, list[str]] = {}
    load_before = os.getloadavg()[0]
    for run in range(args.runs):
        order = list(trees.items()) if run % 2 == 0 else list(reversed(trees.items()))
        for name, tree in order:
            took, modules = one_run(tree)
            times[name].append(took)
            loaded[name] = modules
    load_after = os.getloadavg()[0]
    print(f"CPU time of `import session_graph` in a fresh interpreter, median of {args.runs} alternated runs "
          f"(load {load_before:.1f} -> {load_after:.1f} on {os.cpu_count()} cores)")
    for name, tree in trees.items():
        values = times[name]
        ratio = statistics.median(values) / statistics.median(times[reference])
        print(f"  {name:<10} {statistics.median(values) * 1000:7.1f} ms  (min {min(values) * 1000:.1f}, "
              f"max {max(values) * 1000:.1f}; {ratio:.2f}x {reference})  {tree}")
        print(f"  {'':<10} loaded: {', '.join(loaded[name]) or '-'}")


if __name__ == "__main__":
    main()
