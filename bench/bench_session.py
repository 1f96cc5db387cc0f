"""Per-turn and per-resize cost against history length, and memo traffic.

Run: ``python bench/bench_session.py`` (about a minute). Every figure is printed with its
ratio to a baseline measured in the same process, in CPU time (``time.process_time``: the
machine is shared):

- append + judge per turn, and one resize, at 100 / 10,000 / 100,000 messages of history,
  as a ratio to the 100-message session (flat means ~1.0);
- characters sent to the memo model over a 2,000-message memo-mode conversation, divided
  by the characters of the conversation, next to the same figure for re-sending the whole
  history on every deep resize, as the reference implementation does.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
import statistics
import sys
import time
from typing import Any

from langchain_core.language_models.fake_chat_models import FakeListChatModel
from langchain_core.messages import AIMessage, HumanMessage

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the checkout this bench lives in, not an installed copy
from session_graph import Session, message_chars
from session_graph.compression.memo import ModelMemoUpdater


def _message(i: int) -> Any:
    text = f"message {i} " + "lorem ipsum " * (i % 7)
    return HumanMessage(content=text, id=f"m{i}") if i % 2 == 0 else AIMessage(content=text, id=f"m{i}")


def _session(size: int) -> Session:
    session = Session().use_lite(chars=4000)
    session.set_settings("session.resize.every_n_turns", 0)
    for i in range(size):
        session.append_message(_message(i))
        if i % 500 == 499:
            session.resize()
    session.resize()
    return session


def _per_turn(session: Session, start: int, turns: int) -> float:
    t0 = time.process_time()  # CPU time: the machine is shared
    for i in range(start, start + turns):
        session.append_message(_message(i))
        session.judge_resize()
    return (time.process_time() - t0) / turns


def _per_resize(session: Session, runs: int) -> float:
    times = []
    for _ in range(runs):
        t0 = time.process_time()
        session.resize("deep")
        times.append(time.process_time() - t0)
    return statistics.median(times)


def scaling(sizes: list[int], turns: int, runs: int, rounds: int) -> None:
    sessions = {size: _session(size) for size in sizes}
    per_turn: dict[int, list[float]] = {size: [] for size in sizes}
    per_resize: dict[int, list[float]] = {size: [] for size in sizes}
    for round_ in range(rounds):  # interleave the sizes so machine drift hits them alike
        for size in sizes:
            per_turn[size].append(_per_turn(sessions[size], size + 10**7 + round_ * turns, turns))
            per_resize[size].append(_per_resize(sessions[size], runs))
    print(f"{'history':>10} {'append+judge':>14} {'ratio':>7} {'resize':>10} {'ratio':>7}   (CPU, median of {rounds} rounds)")
    base_turn, base_resize = statistics.median(per_turn[sizes[0]]), statistics.median(per_resize[sizes[0]])
    for size in sizes:
        turn, resize = statistics.median(per_turn[size]), statistics.median(per_resize[size])
        print(f"{size:>10,} {turn * 1e6:>11.1f} us {turn / base_turn:>7.2f} "
              f"{resize * 1e3:>7.2f} ms {resize / base_resize:>7.2f}")


class _MemoModel(FakeListChatModel):
    """Answers every memo request with a small, growing memo."""

    def _call(self, messages: Any, stop: Any = None, run_manager: Any = None, **kwargs: Any) -> str:
        body = messages[-1].content
        memo = json.loads(body.split("Current memo: ", 1)[1].split("\n\nNew messages:\n", 1)[0])["memo"]
        lines = body.split("\n\nNew messages:\n", 1)[1].splitlines()
        memo["folded"] = memo.get("folded", 0) + len(lines)
        memo["last_topic"] = lines[-1][:40] if lines else ""
        return json.dumps({"memo": memo})


def memo_traffic(messages: int, chars: int, ratio: float | None) -> None:
    model = _MemoModel(responses=["unused"])
    session = Session(model=model).use_memo(chars=chars)
    session.set_settings("session.resize.every_n_turns", 0)
    session.set_settings("session.resize.prune_to_ratio", ratio)
    reference_sent = 0
    for i in range(messages):
        session.append_message(_message(i))
        decision = session.judge_resize()
        if decision is not None:
            if decision["type"] == "deep":  # what the reference sends: the whole history again
                reference_sent += sum(message_chars(m) for m in session.full_chat_history)
            session.resize()
    updater = session.handlers.model_updater
    assert isinstance(updater, ModelMemoUpdater)
    total = sum(message_chars(m) for m in session.full_chat_history)
    print(f"memo mode, {messages:,} messages, limit {chars:,} chars, prune_to_ratio {ratio or 'default'}: {updater.calls} model calls, "
          f"{updater.sent_chars:,} chars sent for {total:,} chars of conversation = {updater.sent_chars / total:.2f}x "
          f"(whole history on every deep resize: {reference_sent / total:.1f}x)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="100,10000,100000")
    parser.add_argument("--turns", type=int, default=2000)
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    scaling([int(s) for s in args.sizes.split(",")], args.turns // args.rounds, args.runs, args.rounds)
    for ratio in (None, 1.0, 0.5):  # None: the default (0.8 in memo mode)
        memo_traffic(2000, 4000, ratio)


if __name__ == "__main__":
    main()
