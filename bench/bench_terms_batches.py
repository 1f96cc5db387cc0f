"""The JSONL store's terms file written on every save vs off the save path, inside an agent turn.

Run: ``PYTHONPATH=. python bench/bench_terms_batches.py`` (``--quick``: fewer, shorter blocks).
The agent of ``bench_turn`` (``create_agent`` + ``SessionMiddleware`` + a JSONL store, fsync on,
10,000 and 100,000 messages of history, token budget 4,000) runs turns in alternating blocks,
in one process, with the search index's ``batch_bytes`` at 0 (every save indexes what it
appended, as before issue 25) and at its default (None: no save indexes; a search or ``close``
catches the terms file up from where it stopped).

Timed (CPU, ``time.process_time``): the mean per turn over each block (so the turns that write a
batch are inside it, amortized), mean of the blocks; and one batch alone: ``JsonlStore.close``
writing the terms of 18 turns (~64 KB of log), what a search after them catches up.
"""

from __future__ import annotations

import argparse
from pathlib import Path
import statistics
import sys
import tempfile
import time

from bench_turn import question, session_agent
from langchain_core.messages import HumanMessage

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the checkout this bench lives in, not an installed copy
from session_graph.stores.search_writes import BATCH_BYTES

HELD = 64 * 1024  # the log a catch-up indexes in the second figure


def measure(size: int, rounds: int, turns: int, folder: Path) -> str:
    agent, config, manager = session_agent(folder, size)
    index = manager.store.search_index
    log = next(Path(manager.store.root).rglob("*.jsonl"))
    count = [0]

    def block(n: int) -> float:
        start = time.process_time()
        for _ in range(n):
            count[0] += 1
            agent.invoke({"messages": [HumanMessage(content=question(count[0]))]}, config)
        return (time.process_time() - start) / n * 1e3

    block(5)  # warm up
    before = log.stat().st_size
    block(10)
    per_turn = (log.stat().st_size - before) / 10
    times: dict[int | None, list[float]] = {0: [], BATCH_BYTES: []}
    for _ in range(rounds):
        for batch in times:
            index.batch_bytes = batch
            times[batch].append(block(turns))
    every, batched = statistics.mean(times[0]), statistics.mean(times[BATCH_BYTES])
    manager.close()
    index.batch_bytes = 1 << 62
    held = max(1, round(HELD / per_turn))
    block(held)
    start = time.process_time()
    manager.close()
    one = (time.process_time() - start) * 1e3
    return (f"agent turn at {size:,} messages, CPU per turn (mean of {rounds} alternated blocks of {turns} turns): "
            f"terms file written on every save {every:.2f} ms, off the save path (batch_bytes={BATCH_BYTES}) {batched:.2f} ms = "
            f"{batched / every:.3f}x\n  the log grows {per_turn / 1024:.1f} KB a turn: catching up {held} turns' terms "
            f"(~{HELD // 1024} KB of log, at close or by a search) {one:.2f} ms CPU")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--sizes", default="10000,100000")
    args = parser.parse_args()
    rounds, turns = (2, 40) if args.quick else (4, 150)
    with tempfile.TemporaryDirectory() as tmp:
        for size in (int(s) for s in args.sizes.split(",")):
            print(measure(size, rounds, turns, Path(tmp)))


if __name__ == "__main__":
    main()
