"""The save after a lite prune: appended (``stores/session_append``) against the full save it was.

Run: ``PYTHONPATH=. python3 bench/bench_save_paths.py [--size 10000] [--rounds 7]``. A JSONL
``SessionManager`` (fsync on) holds a session of ``size`` messages (~200-char questions,
~600-char answers; lite prune at 40 messages); each step appends one turn (2 messages), saves,
and when the policy asks, resizes and saves. Timed: CPU (``time.process_time``) of the save
that follows a resize, and of every save of a turn (the turn's append-only save, plus the one
after a resize when there is one), in alternating batches: ``appended`` as the branch does it,
``full`` with the appended path turned off for saves that follow a prune and the tenant
folder's change marker moved on every save (the previous behaviour). Medians of the batches;
the load average is printed beside them.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path
import statistics
import sys
import tempfile
import time

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from session_graph import SessionManager
from session_graph.stores import search_marker
import session_graph.stores.session_append as session_append

QUESTION = "How does the session keep its window inside the budget when tool results are large? " * 2
ANSWER = "It prunes the oldest messages of the window after a turn and folds them into the memo when asked. " * 6


def run(size: int, rounds: int, batch: int) -> dict[str, float]:
    real, bump = session_append._only_pruned, search_marker.bump
    times: dict[str, list[float]] = {"appended": [], "full": []}
    turns: dict[str, list[float]] = {"appended": [], "full": []}
    with tempfile.TemporaryDirectory() as root:
        manager = SessionManager(Path(root))
        session = manager.get_or_create("bench").use_lite(messages=40)
        for i in range(size // 2):
            session.append_message({"role": "user", "content": f"{i} {QUESTION}"})
            session.append_message({"role": "assistant", "content": f"{i} {ANSWER}"})
        session.resize()
        manager.save(session)
        turn = size
        for _ in range(rounds):
            for mode in ("appended", "full"):
                session_append._only_pruned = real if mode == "appended" else (lambda *a, **k: False)
                search_marker.bump = bump if mode == "appended" else (lambda folder, bumped=None: bump(folder))
                spent, saves, all_saves, steps = 0.0, 0, 0.0, 0
                while saves < batch:
                    turn += 1
                    steps += 1
                    session.append_message({"role": "user", "content": f"{turn} {QUESTION}"})
                    session.append_message({"role": "assistant", "content": f"{turn} {ANSWER}"})
                    start = time.process_time()
                    manager.save(session)
                    all_saves += time.process_time() - start
                    if session.judge_resize() is not None:
                        session.resize()
                        start = time.process_time()
                        manager.save(session)
                        spent += time.process_time() - start
                        saves += 1
                times[mode].append(spent / saves * 1000)
                turns[mode].append((all_saves + spent) / steps * 1000)
        session_append._only_pruned, search_marker.bump = real, bump
    appended, full = statistics.median(times["appended"]), statistics.median(times["full"])
    turn_now, turn_before = statistics.median(turns["appended"]), statistics.median(turns["full"])
    return {"appended": appended, "full": full, "ratio": appended / full, "turn": turn_now, "turn_before": turn_before}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=10000)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--batch", type=int, default=40)
    args = parser.parse_args()
    r = run(args.size, args.rounds, args.batch)
    print(f"save after a lite prune at {args.size:,} messages, CPU per save (load {os.getloadavg()[0]:.1f}): "
          f"appended {r['appended']:.3f} ms / full save {r['full']:.3f} ms = {r['ratio']:.2f}x; every save of a turn "
          f"{r['turn']:.3f} ms / as before (full save after a prune, marker moved per save) {r['turn_before']:.3f} ms = "
          f"{r['turn'] / r['turn_before']:.2f}x")


if __name__ == "__main__":
    main()
