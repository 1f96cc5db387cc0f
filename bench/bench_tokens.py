"""Token accounting: per-turn cost, trim_messages comparison, estimate accuracy.

Run: ``python bench/bench_tokens.py`` (a few minutes). Ratios are against baselines run in
the same process, in CPU time (``time.process_time``: the machine is shared):

1. append + judge per message with the exact counter at 1,000 / 10,000 / 100,000 messages,
   as a ratio to one tiktoken encode of the same message's text (the floor: counting it),
   alternated in batches (``per_turn``: ``bench_speed`` reports the same figure with it);
2. the same conversation trimmed after every turn with ``trim_messages`` and the exact
   counter, versus this session (append, judge, resize when told, view), at 1,000 and
   10,000 messages: total seconds and the ratio. ``trim_messages`` is timed on evenly
   spaced turns and integrated (it costs seconds per call at 10,000 messages);
3. the script-aware estimate against tiktoken on English, Chinese, code, JSON and base64.
"""

from __future__ import annotations

import argparse
import base64
import json
from pathlib import Path
import random
import statistics
import sys
import time

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, trim_messages

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the checkout this bench lives in, not an installed copy
from session_graph import Session
from session_graph.accounting.tokens import ApproxTokenCounter, TiktokenCounter, message_tokens

ROOT = Path(__file__).resolve().parents[1]
WORDS = ["the", "session", "keeps", "full", "history", "window", "memo", "budget", "tokens", "model", "reply", "tool", "call", "result", "user"]


def _text(rng: random.Random, i: int) -> str:
    return f"turn {i}: " + " ".join(rng.choice(WORDS) for _ in range(rng.randint(5, 60)))


def _message(rng: random.Random, i: int) -> BaseMessage:
    return (HumanMessage if i % 2 == 0 else AIMessage)(content=_text(rng, i), id=f"m{i}")


def _session(size: int, budget: int) -> Session:
    rng = random.Random(size)
    session = Session().configure(limit={"tokens": budget}, every_n_turns=0)
    session.append_message(SystemMessage(content="You are a helpful assistant.", id="sys"))
    for i in range(size):
        session.append_message(_message(rng, i))
        if i % 200 == 199:
            session.resize()
    session.resize()
    return session


def per_turn(sizes: list[int], turns: int, rounds: int, indent: str = "") -> None:
    """append + judge with the exact counter against one tiktoken encode of the same message's
    text: the one definition of this ratio (``bench_speed`` section 5 calls this function).

    Short messages (``_text``: 5-60 words, ~190 characters), user and assistant alternating.
    Each session has a 4,000-token budget; when the judge asks for a resize it runs, untimed.
    Timed in CPU, in batches of 10 alternated with batches of 10 encodes (so a slow spell of the
    shared machine hits both); the ratio is the median batch's. The encodes and each session
    get texts of their own with the same word counts: a text tiktoken has just encoded encodes
    faster the second time, which would flatter whichever side came second.
    """
    counter = TiktokenCounter("o200k_base")
    encode = counter.encoding.encode_ordinary
    sessions = {size: _session(size, 4000) for size in sizes}
    rng = random.Random(0)
    floors: list[float] = []
    samples: dict[int, list[float]] = {size: [] for size in sizes}
    batch = 10
    counts = [rng.randint(5, 60) for _ in range(turns * rounds)]

    def texts_of(seed: int) -> list[str]:  # one stream of texts per consumer, word counts shared
        words = random.Random(seed)
        return [f"turn {i}: " + " ".join(words.choice(WORDS) for _ in range(n)) for i, n in enumerate(counts)]

    texts = texts_of(1)
    own = {size: texts_of(2 + n) for n, size in enumerate(sizes)}
    for first in range(0, len(texts), batch):
        chunk = texts[first : first + batch]
        t0 = time.process_time()  # CPU time: the machine is shared
        for text in chunk:
            encode(text)
        floors.append((time.process_time() - t0) / len(chunk))
        for size in sizes:
            session = sessions[size]
            messages = [(HumanMessage if k % 2 == 0 else AIMessage)(content=text, id=f"x{size}-{k}")
                        for k, text in enumerate(own[size][first : first + batch], first)]
            paused = 0.0
            t0 = time.process_time()
            for message in messages:
                session.append_message(message)
                if session.judge_resize():
                    t1 = time.process_time()
                    session.resize()  # untimed: the resize is not part of append + judge
                    paused += time.process_time() - t1
            samples[size].append((time.process_time() - t0 - paused) / len(chunk))
    floor = statistics.median(floors)
    chars = statistics.mean(len(t) for t in texts)
    print(f"{indent}append + judge per message, exact counter (o200k_base), 4,000-token budget, CPU, batches of {batch} "
          f"alternated with one tiktoken encode of a text of the same word count, not the same text ({chars:.0f} chars); "
          f"a resize the judge asks for runs untimed: encode {floor * 1e6:.1f} us")
    for size in sizes:
        value = statistics.median(samples[size])
        print(f"{indent}  at {size:>7,} messages: {value * 1e6:6.1f} us = {value / floor:5.2f}x one encode (goal <= 2)")


def versus_trim(sizes: list[int], budget: int, samples: int) -> None:
    counter = TiktokenCounter("o200k_base")

    def exact_counter(messages: list[BaseMessage]) -> int:  # what a user passes to trim_messages
        return sum(message_tokens(m, counter) for m in messages)

    print(f"\n2. trimming to {budget} tokens after every turn: trim_messages vs this session (CPU)")
    print(f"{'messages':>10} {'trim_messages':>15} {'session':>10} {'ratio':>8}")
    for size in sizes:
        rng = random.Random(size)
        history = [SystemMessage(content="You are a helpful assistant.", id="sys")]
        history += [_message(rng, i) for i in range(size)]
        session = Session().configure(limit={"tokens": budget}, every_n_turns=0)
        t0 = time.process_time()  # CPU time: the machine is shared
        for message in history:
            session.append_message(message)
            if session.judge_resize():
                session.resize()
            session.view()
        ours = time.process_time() - t0
        points = sorted({max(2, size * k // samples) for k in range(1, samples + 1)})
        costs = []
        for n in points:
            t0 = time.process_time()
            trim_messages(history[: n + 1], max_tokens=budget, token_counter=exact_counter, strategy="last",
                          start_on="human", include_system=True)
            costs.append(time.process_time() - t0)
        # integrate the sampled per-call cost over every turn (trapezoids, from 0 at turn 0)
        xs, ys = [0, *points], [0.0, *costs]
        trim_total = sum((xs[i + 1] - xs[i]) * (ys[i] + ys[i + 1]) / 2 for i in range(len(xs) - 1))
        print(f"{size:>10,} {trim_total:>13.1f} s {ours:>8.2f} s {trim_total / ours:>7.0f}x"
              f"   (trim_messages at {size:,} messages: {costs[-1] * 1e3:.0f} ms per call; {len(points)} sampled turns)")


def accuracy() -> None:
    exact = {name: TiktokenCounter(name) for name in ("o200k_base", "cl100k_base")}
    approx = ApproxTokenCounter()
    rng = random.Random(1)
    kinds = {
        "English": (ROOT / "README.md").read_text(),
        "Chinese": "会话管理库把完整的历史记录保存下来，同时只把当前窗口发送给模型。当窗口超出预算时，策略决定轻量裁剪还是深度压缩，"
        "并把较早的内容折叠进备忘录。用户的偏好、约定和未完成的任务都会被保留下来，模型在下一轮仍能看到它们。" * 8,
        "code": (ROOT / "session_graph" / "session.py").read_text(),
        "JSON": json.dumps([{"id": i, "name": f"item {i}", "tags": ["alpha", "beta"], "price": i * 1.25, "ok": i % 2 == 0}
                            for i in range(200)]),
        "base64": base64.b64encode(rng.randbytes(6000)).decode(),
    }
    print("\n3. estimate vs tiktoken (estimate / exact; chars/4 shown for comparison)")
    print(f"{'kind':>8} {'o200k':>8} {'estimate':>9} {'ratio':>6} {'cl100k':>8} {'ratio':>6} {'chars/4 ratio':>14}")
    for kind, text in kinds.items():
        o200k, cl100k, guess = exact["o200k_base"].count_text(text), exact["cl100k_base"].count_text(text), approx.count_text(text)
        print(f"{kind:>8} {o200k:>8} {guess:>9} {guess / o200k:>6.2f} {cl100k:>8} {guess / cl100k:>6.2f} {len(text) / 4 / o200k:>14.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,10000,100000")
    parser.add_argument("--trim-sizes", default="1000,10000")
    parser.add_argument("--turns", type=int, default=400)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--samples", type=int, default=8)
    parser.add_argument("--quick", action="store_true",
                        help="smaller run: sizes 1000,10000, trim size 1000, 100 turns, 3 rounds (what run_all.py --quick passes)")
    args = parser.parse_args()
    if args.quick:
        args.sizes, args.trim_sizes, args.turns, args.rounds = "1000,10000", "1000", 100, 3
    per_turn([int(s) for s in args.sizes.split(",")], args.turns, args.rounds)
    versus_trim([int(s) for s in args.trim_sizes.split(",")], 4000, args.samples)
    accuracy()


if __name__ == "__main__":
    main()
