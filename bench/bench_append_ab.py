"""append + judge per message against another checkout of the package, in one process.

Run: ``PYTHONPATH=. python3 bench/bench_append_ab.py --baseline DIR`` (DIR: e.g. ``git archive
<commit> | tar -x -C DIR``). Each tree's ``session_graph`` is imported afresh and kept in its own
modules (as ``bench_turn_causes --baseline`` does), so both are timed in one process.

Timed (CPU, ``time.process_time``; the machine is shared): per message, ``append_message`` then
``judge_resize`` on a session that never resizes (a token budget of 10^9: what is timed is the
per-message path only, no resize), exact counter (o200k_base); short messages (``bench_tokens``'
words, 5-60 of them), user and assistant alternating; batches of 2,000 fresh messages per tree,
alternated with a batch of as many tiktoken encodes of the same texts (the floor), the order
reversed every round; medians of the rounds. Printed: the encode, each tree's time, what it
spends beyond the encode, and the ratio to the encode (``bench_tokens`` section 1's figure, here
without its resizes and its batches of 10).
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import time
from typing import Any

from langchain_core.messages import AIMessage, HumanMessage, SystemMessage
import trees as checkouts

WORDS = ["the", "session", "keeps", "full", "history", "window", "memo", "budget", "tokens", "model", "reply", "tool", "call", "result", "user"]


def load(root: str) -> Any:
    """The ``Session`` class of the checkout at ``root``, its modules imported afresh (``checkouts.load``)."""
    return checkouts.load(root)["session_graph"].Session


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", required=True, help="another checkout's root (the directory holding its session_graph/)")
    parser.add_argument("--rounds", type=int, default=16)
    parser.add_argument("--batch", type=int, default=2000)
    args = parser.parse_args()
    trees = {name: load(root) for name, root in checkouts.roots(args.baseline).items()}
    from session_graph.accounting.tokens import TiktokenCounter

    encode = TiktokenCounter("o200k_base").encoding.encode_ordinary
    rng = random.Random(0)
    texts = [f"turn {i}: " + " ".join(rng.choice(WORDS) for _ in range(rng.randint(5, 60))) for i in range(args.batch)]
    sessions = {}
    for name, session_class in trees.items():
        session = session_class().configure(limit={"tokens": 10**9}, every_n_turns=0)
        session.append_message(SystemMessage(content="You are a helpful assistant.", id="sys"))
        sessions[name] = session
    times: dict[str, list[float]] = {name: [] for name in ["encode", *sessions]}
    for round_ in range(args.rounds):
        order = ["encode", *sessions] if round_ % 2 else [*reversed(sessions), "encode"]
        for name in order:
            messages = [(HumanMessage if j % 2 == 0 else AIMessage)(content=t, id=f"r{round_}-{j}") for j, t in enumerate(texts)]
            start = time.process_time()
            if name == "encode":
                for message in messages:
                    encode(message.content)
            else:
                session = sessions[name]
                for message in messages:
                    session.append_message(message)
                    session.judge_resize()
            times[name].append((time.process_time() - start) / len(messages))
    floor = statistics.median(times["encode"])
    print(f"append + judge per message, never resized, exact counter, CPU, {args.rounds} alternated rounds of {args.batch:,} messages "
          f"({statistics.mean(len(t) for t in texts):.0f} chars), load {os.getloadavg()[0]:.1f}: one encode {floor * 1e6:.2f} us")
    for name in sessions:
        value = statistics.median(times[name])
        print(f"  {name}: {value * 1e6:6.2f} us, {(value - floor) * 1e6:5.2f} us beyond the encode = {value / floor:.2f}x one encode")


if __name__ == "__main__":
    main()
