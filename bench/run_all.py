"""Run every bench and rewrite the README's figures from that one run.

Run: ``python3 bench/run_all.py`` (all benches, full sizes: long), ``--quick`` (smaller sizes,
said so in the README beside the figures), ``--only turn,speed`` (some benches; the other
regions are left as they are), ``--no-write`` (print only), ``--check`` (only check that every
bench has its README region and every region its bench; nothing runs).

Each bench is one entry of ``BENCHES``: its name, its script and arguments (full and quick),
and what it times. Its figures live in README.md between ``<!-- bench:NAME -->`` and
``<!-- /bench:NAME -->``; this script replaces what is between the markers with the command,
the date, the machine's load (1-minute load average before and after, and the cores) and the
bench's output, verbatim. Figures outside those regions are not regenerated: keep them there.
To add a bench: one ``Bench(...)`` line here and an empty region in the README.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
import datetime
import os
from pathlib import Path
import re
import subprocess
import sys
import time

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"


@dataclass(frozen=True)
class Bench:
    name: str
    script: str
    args: tuple[str, ...] = ()
    quick: tuple[str, ...] = ()
    what: str = ""


BENCHES = [
    Bench("turn", "bench_turn.py", (), ("--quick",),
          "an agent turn with SessionMiddleware + JSONL vs a stock agent (and stock + view, stock + InMemorySaver "
          "holding the history, stock + documented trimming; the work floor: the goal's work alone, split), CPU; fsyncs per turn"),
    Bench("turn_causes", "bench_turn_causes.py", (), ("--rounds", "8", "--batch", "6"),
          "where the middleware's turn spends its CPU: saves, resize, the rest (record, judge, view, glue)"),
    Bench("write", "bench_write.py", (), ("--rounds", "20"),
          "one write of an agent turn (JSONL appended save: durable input, turn end, after a lite prune) vs one os.write (+ fsync) of its bytes; syscalls per write"),
    Bench("speed", "bench_speed.py", (), ("--quick",),
          "resize vs bare invoke, window vs trim_messages, loads, memory (RSS and tracemalloc), append + judge"),
    Bench("stores", "bench_stores.py", (), ("--rss-sizes", "100000", "--turns", "10", "--flat-rounds", "20", "--writer-turns", "100", "--merge-rounds", "10"),
          "persisting a turn per store vs rewriting the file; flat saves 100k/1k; loads; RSS loaded/appended (100k; the full "
          "run adds 1M: ~15 min more, 1.5 GB per process); merging saves; concurrent writers; contended memo folds with and without the fold lease"),
    Bench("session", "bench_session.py", (), ("--sizes", "100,10000", "--turns", "500", "--runs", "3", "--rounds", "3"),
          "append + judge and a resize against history length; memo traffic"),
    Bench("tokens", "bench_tokens.py", (), ("--sizes", "1000,10000", "--trim-sizes", "1000", "--turns", "100", "--rounds", "3"),
          "exact-counter turn cost vs one encode; trim_messages comparison; the estimate's accuracy"),
    Bench("agents", "bench_agents.py", (), ("--turns", "200", "--stock-turns", "100"),
          "checkpoint bytes and turn time with and without the middleware"),
    Bench("memory", "bench_memory.py", (), (),
          "long-term memory: duplicates, traffic, commit phases, prefilter recall (BM25 and OfflineEmbeddings)"),
    Bench("memory_realistic", "bench_memory.py", ("--realistic",), ("--seeds", "1"),
          "realistic memory workload, 1 and 2-3 racing processes, file and SqliteStore; prefilter scaling"),
    Bench("recall", "bench_recall.py", (), ("--quick",),
          "history recall@k vs rank_bm25; index cost per save; search latency by size (no model)"),
    Bench("real_model_fake", "bench_real_model.py", ("--fake",), (),
          "memo, summary, commit with a scripted model writing messy reply shapes: refusals, facts kept"),
    Bench("real_model_replay", "bench_real_model.py", ("--replay", "tests/data/real-model-replies.json"), (),
          "recorded Qwen2.5-Coder-1.5B replies read again: refused now vs by the previous parser"),
    Bench("fidelity", "bench_fidelity.py", (), ("--messages", "500"),
          "summary and memo modes vs SummarizationMiddleware and langmem"),
]

_REGION = re.compile(r"(<!-- bench:(?P<name>[\w-]+) -->\n)(?P<body>.*?)(<!-- /bench:(?P=name) -->)", re.S)


def regions(text: str) -> list[str]:
    """The names of the bench regions in ``text``, in order."""
    return [m.group("name") for m in _REGION.finditer(text)]


def check(text: str) -> list[str]:
    """What is wrong between ``BENCHES`` and the README's regions (empty: nothing)."""
    found, names = regions(text), [b.name for b in BENCHES]
    problems = [f"no README region <!-- bench:{n} --> for the bench {n!r}" for n in names if n not in found]
    problems += [f"the README region {n!r} has no bench in bench/run_all.py" for n in found if n not in names]
    problems += [f"the README region {n!r} appears twice" for n in set(found) if found.count(n) > 1]
    return problems


def load() -> str:
    one, _, _ = os.getloadavg()
    return f"{one:.2f}"


def run(bench: Bench, quick: bool) -> str:
    """The README text of one bench run: command, date, load, output."""
    args = [*bench.args, *(bench.quick if quick else ())]
    command = " ".join(["python3", f"bench/{bench.script}", *args])
    before, started = load(), time.monotonic()
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep)}
    done = subprocess.run([sys.executable, str(ROOT / "bench" / bench.script), *args], cwd=ROOT, env=env,
                          capture_output=True, text=True)
    if done.returncode:
        raise SystemExit(f"{command} failed ({done.returncode}):\n{done.stdout[-2000:]}\n{done.stderr[-4000:]}")
    seconds = time.monotonic() - started
    stamp = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    output = done.stdout.rstrip("\n")
    return (f"`{command}`{' (quick sizes)' if quick and bench.quick else ''}, regenerated by `bench/run_all.py` on {stamp}; "
            f"machine load (1-minute average) {before} before, {load()} after, on {os.cpu_count()} cores; "
            f"{seconds:.0f} s.\n\n```text\n{output}\n```\n")


def rewrite(text: str, name: str, body: str) -> str:
    """``text`` with the region ``name`` holding ``body``."""
    def swap(match: re.Match[str]) -> str:
        return match.group(1) + body + match.group(4) if match.group("name") == name else match.group(0)

    return _REGION.sub(swap, text)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller sizes (said so beside the figures)")
    parser.add_argument("--only", default="", help="comma-separated bench names (default: all)")
    parser.add_argument("--no-write", action="store_true", help="print the regions, leave README.md as it is")
    parser.add_argument("--check", action="store_true", help="only check benches against README regions")
    parser.add_argument("--list", action="store_true", help="list the benches and what each times")
    args = parser.parse_args()
    if args.list:
        for bench in BENCHES:
            print(f"{bench.name:>17}: bench/{bench.script}: {bench.what}")
        return
    problems = check(README.read_text())
    if problems or args.check:
        print("\n".join(problems) or "every bench has its README region")
        raise SystemExit(1 if problems else 0)
    wanted = [n for n in args.only.split(",") if n] or [b.name for b in BENCHES]
    unknown = set(wanted) - {b.name for b in BENCHES}
    if unknown:
        raise SystemExit(f"no bench named {', '.join(sorted(unknown))}; see --list")
    for bench in BENCHES:
        if bench.name not in wanted:
            continue
        print(f"running {bench.name} (bench/{bench.script}) ...", file=sys.stderr, flush=True)
        body = run(bench, args.quick)
        print(body)
        if not args.no_write:  # written after each bench, so a long run keeps what it finished
            README.write_text(rewrite(README.read_text(), bench.name, body))


if __name__ == "__main__":
    main()
