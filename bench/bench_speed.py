"""Speed: a resize against a bare LangGraph invoke, a window kept after every message against
``trim_messages``, loads of 1k-100k-message sessions, memory per message, append + judge.

Run: ``python bench/bench_speed.py`` (several minutes; ``--quick`` for a smaller run;
``SESSION_GRAPH_BENCH_1M=1`` adds RSS at 1,000,000 messages). Every figure is a ratio to a
baseline measured in the same process (CPU time, ``time.process_time``, baselines and ours in
alternating batches, so a slow spell of the shared machine hits both); loads are wall time.
Goals (issues 13 and 25):

- a lite resize that prunes / a bare 3-node ``invoke``: <= 1.2x, sync and async (a no-op
  resize, with nothing to prune, is printed too, labelled so); such a resize is plain and
  unobserved, so it runs without Pregel (``resize/direct.py``), and the same resize through
  Pregel (what an observed run takes) is printed beside it;
- a 4,000-token window after every message vs ``trim_messages`` with a per-id cached counter:
  >= 20x at 10,000 messages, >= 1x at 1,000, on short and on realistic agent turns; vs an
  uncached counter >= 1,000x on short texts;
- ``get_or_create`` of a 100k-message session: <= 20 ms (lazy), full load <= 1.2 s;
- RSS of a session loaded from a store (all paged in) / the same session appended in a fresh
  process: <= 1.1 at 100,000 messages (tracemalloc's live-object ratio is printed apart);
- append + judge per message flat (100k / 100 <= 1.2) and <= 2x one tiktoken encode.
"""

from __future__ import annotations

import argparse
import asyncio
from collections.abc import Callable, Generator, Iterator
import contextlib
import functools
import gc
import os
from pathlib import Path
import random
import statistics
import sys
import tempfile
import time
import tracemalloc
from typing import Any, TypedDict

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage, trim_messages
from langgraph.graph import END, START, StateGraph

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the checkout this bench lives in, not an installed copy
from bench_tokens import per_turn
from bench_turn import balanced, order

from session_graph import Session, SessionManager, TiktokenCounter, message_tokens
from session_graph.resize.direct import FORCE_PREGEL_ENV, unobserved
from session_graph.stores import JsonlStore, PostgresStore, SqliteStore

WORDS = ["the", "session", "keeps", "its", "full", "history", "while", "the", "window", "holds", "what", "the", "model", "sees", "and", "a", "memo", "the", "rest"]


def median_time(fn: Callable[[], Any], n: int) -> float:
    """Median CPU seconds of ``fn`` (``time.process_time``: the machine is shared)."""
    times = []
    for _ in range(n):
        start = time.process_time()
        fn()
        times.append(time.process_time() - start)
    return statistics.median(times)


def interleaved(base: Callable[[], Any], ours: Callable[[], Any], n: int, batch: int = 10) -> tuple[float, float]:
    """Median per-call CPU times of ``base`` and ``ours``, timed in alternating batches so a slow
    spell of a noisy machine slows both alike (the ratio is what is reported)."""
    times: tuple[list[float], list[float]] = ([], [])
    for _ in range(max(1, n // batch)):
        for fn, out in ((base, times[0]), (ours, times[1])):
            start = time.process_time()
            for _ in range(batch):
                fn()
            out.append((time.process_time() - start) / batch)
    return statistics.median(times[0]), statistics.median(times[1])


def conversation(n: int, seed: int = 1, start: int = 0) -> list[BaseMessage]:
    """Realistic-ish turns: user, a tool call and its result every 5th turn, assistant."""
    rng = random.Random(seed + start)
    out: list[BaseMessage] = []
    i = start
    while len(out) < n:
        text = " ".join(rng.choice(WORDS) for _ in range(rng.randint(5, 60)))
        out.append(HumanMessage(content=f"turn {i}: {text}", id=f"u{i}"))
        if i % 5 == 0:
            out.append(AIMessage(content="", tool_calls=[{"id": f"c{i}", "name": "lookup", "args": {"q": text[:30]}}], id=f"t{i}"))
            out.append(ToolMessage(content=f"result {i}: " + text[::-1], tool_call_id=f"c{i}", name="lookup", id=f"r{i}"))
        out.append(AIMessage(content=f"answer {i}: " + " ".join(rng.choice(WORDS) for _ in range(rng.randint(5, 80))), id=f"a{i}"))
        i += 1
    return out[:n]


# -- 1. a resize against a bare 3-node invoke (the goal) and a 1-node one (the run's shape) -------
class _S(TypedDict):
    x: int


def bare_graph(names: str = "abc") -> Any:
    """A bare chain of ``len(names)`` nodes, each adding 1 to a one-key state."""
    graph = StateGraph(_S)
    for name in names:
        graph.add_node(name, lambda s: {"x": s["x"] + 1})
    for before, after in zip([START, *names], [*names, END], strict=True):
        graph.add_edge(before, after)
    return graph.compile()


def resize_vs_invoke(size: int, n: int) -> None:
    """A forced lite resize with nothing to prune and one that prunes (a turn of 4 messages
    appended, untimed, before each), against a bare 3-node invoke; the pruning one, sync and async,
    also against a bare 1-node invoke, the LangGraph shape of that run (the judge decides before the run, the
    graph runs START -> lite_prune); CPU time, batches of 10 in turning order (``slot_orders``).

    The session's resizes are plain and unobserved, so they run the compiled graph node by node
    without Pregel (``resize/direct.py``): the default. The same pruning resize forced through
    LangGraph's Pregel loop (``SESSION_GRAPH_RESIZE_EXECUTOR=pregel``, what an observed run or one with
    a user's node takes) is timed in the same batches and printed apart, so nothing flatters."""
    bare, bare1 = bare_graph(), bare_graph("a")
    session = Session().use_lite(chars=4000)
    session.set_settings("session.resize.every_n_turns", 0)
    for i, message in enumerate(conversation(size)):
        session.append_message(message)
        if i % 5000 == 4999:
            session.resize()
    session.resize()
    extra = iter(conversation(10**6, start=size + 1))

    def grow() -> None:
        for _ in range(4):
            session.append_message(next(extra))

    def schedule() -> Generator[int, float, tuple[float, float, float]]:
        """The batches of 10 in turning order (``slot_orders``: each first, second and last, after each
        other one, equally often), sync and async from one loop: yields the slot of each timed call
        (0 the baseline, 1 the direct resize, 2 the Pregel one: its executor set, the untimed turn that
        puts the window over its limit appended), receives the CPU time its caller spent on it; returns
        the three medians."""
        times: tuple[list[float], list[float], list[float]] = ([], [], [])
        for slots in slot_orders(n):
            spent = [0.0, 0.0, 0.0]
            for slot in slots:
                with executor(None if slot < 2 else "pregel"):
                    for _ in range(10):
                        if slot:
                            grow()  # untimed: the turn that puts the window over its limit
                        spent[slot] += yield slot
            for slot in range(3):
                times[slot].append(spent[slot] / 10)
        return statistics.median(times[0]), statistics.median(times[1]), statistics.median(times[2])

    def batches(base: Callable[[], Any], ours: Callable[[], Any]) -> tuple[float, float, float]:
        """Medians of the baseline, the direct resize and the Pregel one (``schedule``)."""
        flow, spent = schedule(), None
        while True:
            try:
                slot = flow.send(spent)
            except StopIteration as stop:
                return stop.value
            start = time.process_time()
            base() if slot == 0 else ours()
            spent = time.process_time() - start

    if not unobserved():  # every resize would then run through Pregel, and the lines saying "direct" would lie
        raise SystemExit("bench_speed section 1: callbacks or LangSmith tracing observe this process, so no resize "
                         "runs without Pregel; unset LANGSMITH_TRACING / LANGCHAIN_TRACING_V2 and run it again.")
    with executor(None):  # the default choice (direct) even when the environment forces Pregel
        base, ours = interleaved(lambda: bare.invoke({"x": 0}), lambda: session.resize("lite"), n)
    print(f"  sync : no-op resize (nothing to prune; direct, no Pregel) at {size:,} msgs {ours * 1e3:.3f} ms / bare 3-node invoke "
          f"{base * 1e3:.3f} ms = {ours / base:.2f}x")
    base, ours, pregel = batches(lambda: bare.invoke({"x": 0}), lambda: session.resize("lite"))
    print(f"  sync : lite resize that prunes (4 messages over; direct, no Pregel) at {size:,} msgs {ours * 1e3:.3f} ms / bare 3-node invoke "
          f"{base * 1e3:.3f} ms = {ours / base:.2f}x (goal <= 1.2)")
    print(f"  sync : the same resize forced through Pregel (the executor of a run with callbacks or a node of yours, without the callbacks' own cost) {pregel * 1e3:.3f} ms / bare 3-node invoke "
          f"{base * 1e3:.3f} ms = {pregel / base:.2f}x; direct / Pregel = {ours / pregel:.2f}x")
    base, ours, pregel = batches(lambda: bare1.invoke({"x": 0}), lambda: session.resize("lite"))
    print(f"  sync : lite resize that prunes (4 messages over; direct, no Pregel) at {size:,} msgs {ours * 1e3:.3f} ms / bare 1-node invoke "
          f"{base * 1e3:.3f} ms = {ours / base:.2f}x (the run's graph: START -> lite_prune; through Pregel {pregel / base:.2f}x)")

    async def run(graph: Any) -> tuple[float, float, float]:
        flow, spent = schedule(), None
        while True:
            try:
                slot = flow.send(spent)
            except StopIteration as stop:
                return stop.value
            start = time.process_time()
            await (graph.ainvoke({"x": 0}) if slot == 0 else session.async_resize("lite"))
            spent = time.process_time() - start

    abase, aours, apregel = asyncio.run(run(bare))
    print(f"  async: lite resize that prunes (4 messages over; direct, no Pregel) at {size:,} msgs {aours * 1e3:.3f} ms / bare 3-node ainvoke "
          f"{abase * 1e3:.3f} ms = {aours / abase:.2f}x (goal <= 1.2)")
    print(f"  async: the same resize forced through Pregel (the executor of a run with callbacks or a node of yours, without the callbacks' own cost) {apregel * 1e3:.3f} ms / bare 3-node ainvoke "
          f"{abase * 1e3:.3f} ms = {apregel / abase:.2f}x; direct / Pregel = {aours / apregel:.2f}x")
    abase, aours, apregel = asyncio.run(run(bare1))
    print(f"  async: lite resize that prunes (4 messages over; direct, no Pregel) at {size:,} msgs {aours * 1e3:.3f} ms / bare 1-node ainvoke "
          f"{abase * 1e3:.3f} ms = {aours / abase:.2f}x (the run's graph: START -> lite_prune; through Pregel {apregel / abase:.2f}x)")
    assert session.judge_resize() is None  # every resize, direct or through Pregel, left the window within its limits


def slot_orders(n: int) -> list[tuple[int, ...]]:
    """The order of section 1's batches: the baseline (0), the direct resize (1) and the Pregel one
    (2) in bench_turn's turning order (``order``; for three, each of the 6 orders once a cycle),
    ``n // 10`` batches raised to whole cycles (``balanced``): the one that runs later in a batch
    pays what the earlier ones leave behind (garbage, caches), so each runs first, second and last,
    and right after each other one, equally often."""
    return [tuple(order([0, 1, 2], round_)) for round_ in range(balanced(max(1, n // 10), 3))]


@contextlib.contextmanager
def executor(name: str | None) -> Iterator[None]:
    """Resizes through ``name`` (``"pregel"``) for the block, or the default choice (None)."""
    saved = os.environ.get(FORCE_PREGEL_ENV)
    if name is None:
        os.environ.pop(FORCE_PREGEL_ENV, None)
    else:
        os.environ[FORCE_PREGEL_ENV] = name
    try:
        yield
    finally:
        if saved is None:
            os.environ.pop(FORCE_PREGEL_ENV, None)
        else:
            os.environ[FORCE_PREGEL_ENV] = saved


def realistic(n: int, start: int = 0) -> list[BaseMessage]:
    """Agent turns as ``bench_turn`` makes them: a ~200-char question, a tool call, a ~0.7 kB
    result, a ~0.6 kB answer."""
    from bench_turn import history

    made = history(n + 4 * (start // 4 + 1))[start : start + n] if start else history(n)
    return [m.model_copy(update={"id": f"{m.id}-{start}"}) for m in made] if start else made


def window_vs_trim(size: int, turns: int, texts: str = "short") -> None:
    counter = TiktokenCounter("o200k_base")
    make = conversation if texts == "short" else (lambda n, start=0: realistic(n, start))
    history = make(size)
    session = Session().configure(limit={"tokens": 4000}, every_n_turns=0)
    session.append_message(SystemMessage(content="You are helpful.", id="sys"))
    for message in history:
        session.append_message(message)
    session.resize()
    new = make(turns, start=10**6) if texts == "short" else realistic(turns, start=size)
    full = [session.full_chat_history[0], *history]
    cache: dict[str, int] = {m.id or "": message_tokens(m, counter) for m in full}

    def cached(messages: list[BaseMessage]) -> int:
        return sum(cache[m.id or ""] for m in messages)

    def uncached(messages: list[BaseMessage]) -> int:
        return sum(message_tokens(m, counter) for m in messages)

    def trim(count: Callable[[list[BaseMessage]], int]) -> None:
        trim_messages(full, max_tokens=3997, token_counter=count, strategy="last", start_on="human", include_system=True)

    ours_total, cached_times, uncached_times = 0.0, [], []
    block = max(1, turns // 6)
    for first in range(0, turns, block):  # alternate blocks of turns: ours, then the baselines on the same messages
        gc.collect()  # neither side pays for the other's garbage
        start = time.process_time()
        for message in new[first : first + block]:
            session.append_message(message)
            if session.judge_resize():
                session.resize()
            session.view()
        ours_total += time.process_time() - start  # the mean: resizes are part of the cost
        gc.collect()
        for i, message in enumerate(new[first : first + block]):
            full.append(message)
            cache[message.id or ""] = message_tokens(message, counter)
            if i == 0:
                uncached_times.append(median_time(lambda: trim(uncached), 1))
            cached_times.append(median_time(lambda: trim(cached), 1))
    ours = ours_total / turns
    c, u = statistics.median(cached_times), statistics.median(uncached_times)
    print(f"  {texts:>9} texts, {size:>6,} msgs: ours (append, judge, resize when due, view) {ours * 1e6:8.1f} us/message | "
          f"trim_messages, per-id cached counter {c * 1e6:8.0f} us "
          f"= {c / ours:6.1f}x (goal >= 20 at 10k, >= 1 at 1k) | uncached {u * 1e3:7.1f} ms = {u / ours:8,.0f}x (goal >= 1,000)")


# -- 3. loads ------------------------------------------------------------------------------------
def stores(root: Path) -> list[tuple[str, Callable[[], Any]]]:
    made: list[tuple[str, Callable[[], Any]]] = [
        ("jsonl", lambda: JsonlStore(root / "jsonl", fsync=False)),
        ("sqlite", lambda: SqliteStore(root / "s.sqlite3")),
    ]
    if os.environ.get("SESSION_GRAPH_PG_DSN"):
        made.append(("postgres", lambda: PostgresStore(os.environ["SESSION_GRAPH_PG_DSN"])))
    return made


def build_stored(store: Any, tenant: str, key: str, size: int) -> None:
    manager = SessionManager(store, tenant=tenant)
    session = manager.get_or_create(key)
    session.configure(limit={"tokens": 4000}, every_n_turns=0)
    session.append_message(SystemMessage(content="You are helpful.", id="sys"))
    for i, message in enumerate(conversation(size)):
        session.append_message(message)
        if i % 1000 == 999:
            session.resize()
            manager.save(session)
    session.resize()
    manager.save(session)


def lazy_load(store: Any, tenant: str, size: int) -> Session:
    return SessionManager(store, tenant=tenant).get_or_create(f"k{size}")


def full_load(store: Any, tenant: str, size: int) -> int:
    return len(list(lazy_load(store, tenant, size).full_chat_history))


def loads(sizes: list[int], reps: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        for name, make in stores(Path(tmp)):
            store = make()
            tenant = f"bench-{os.getpid()}-{random.randrange(10**9)}"
            lazy_ms, full_s = {}, {}
            for size in sizes:
                build_stored(store, tenant, f"k{size}", size)

                lazy_ms[size] = median_time(functools.partial(lazy_load, store, tenant, size), reps) * 1e3
                full_s[size] = median_time(functools.partial(full_load, store, tenant, size), max(1, reps // 3))
            small, big = sizes[0], sizes[-1]
            growth = (full_s[big] / big) / (full_s[small] / small)
            cells = " | ".join(f"{s:,}: lazy {lazy_ms[s]:6.2f} ms, full {full_s[s]:6.3f} s" for s in sizes)
            print(f"  {name:8} {cells} (wall time)")
            print(f"  {'':8} per-message full-load time {big:,} / {small:,}: {growth:.2f}x (linear = 1.0); "
                  f"goals at {big:,}: lazy <= 20 ms, full <= 1.2 s")
            store.close()


# -- 4. memory -------------------------------------------------------------------------------------
def memory(size: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        store = JsonlStore(Path(tmp) / "jsonl", fsync=False)
        gc.collect()
        tracemalloc.start()
        before = tracemalloc.get_traced_memory()[0]
        session = Session()
        for message in conversation(size):
            session.append_message(message)
        appended = tracemalloc.get_traced_memory()[0] - before
        tracemalloc.stop()
        manager = SessionManager(store)
        stored = manager.get_or_create("m")
        for message in session.full_chat_history:
            stored.append_message(message)
        manager.save(stored)
        del session, stored, manager
        gc.collect()
        tracemalloc.start()
        before = tracemalloc.get_traced_memory()[0]
        loaded = SessionManager(store).get_or_create("m")
        history = list(loaded.full_chat_history)
        held = tracemalloc.get_traced_memory()[0] - before
        tracemalloc.stop()
        assert len(history) == size
    print(f"  tracemalloc (live Python objects), {size:,} messages: appended {appended / size / 1024:.2f} KB/msg, "
          f"loaded (paged in) {held / size / 1024:.2f} KB/msg = {held / appended:.2f}x")


_RSS = """
import gc, resource, sys
sys.path[:0] = [sys.argv[3], sys.argv[3] + '/bench']
from bench_speed import conversation
from session_graph import Session, SessionManager
from session_graph.stores import JsonlStore

def rss():
    with open('/proc/self/statm') as f:
        return int(f.read().split()[1]) * resource.getpagesize()

size, mode = int(sys.argv[1]), sys.argv[2]
import langchain_core.messages, session_graph.stores.codec  # imports before the baseline
gc.collect()
before = rss()
if mode == 'appended':  # the messages made in this process, as an app would, then appended
    session = Session()
    for message in conversation(size):
        session.append_message(message)
else:
    session = SessionManager(JsonlStore(sys.argv[4], fsync=False)).get_or_create('m')
    session.full_chat_history.load() if hasattr(session.full_chat_history, 'load') else None
    assert len(session.full_chat_history) == size
gc.collect()
print(rss() - before)
"""


def rss(size: int) -> None:
    """Resident memory of a session of ``size`` messages appended in a fresh process against the
    same session loaded (every message paged in) from a JSONL store in another fresh process."""
    import subprocess
    import sys

    root = str(Path(__file__).resolve().parent.parent)
    with tempfile.TemporaryDirectory() as tmp:
        manager = SessionManager(JsonlStore(Path(tmp), fsync=False))
        stored = manager.get_or_create("m")
        for message in conversation(size):
            stored.append_message(message)
        manager.save(stored)
        del stored, manager
        gc.collect()
        run = lambda mode: int(subprocess.run([sys.executable, "-c", _RSS, str(size), mode, root, tmp], check=True,  # noqa: E731
                                              capture_output=True, text=True).stdout.strip().splitlines()[-1])
        appended, loaded = run("appended"), run("loaded")
    print(f"  RSS, {size:,} messages (fresh processes): appended {appended / size:.0f} B/msg, loaded from JSONL and paged in "
          f"{loaded / size:.0f} B/msg = {loaded / appended:.2f}x (goal <= 1.1)")


# -- 5. append + judge ------------------------------------------------------------------------------
def _turn(session: Session, new: Any) -> None:
    session.append_message(next(new))
    session.judge_resize()


def append_judge(sizes: list[int], turns: int) -> None:
    """Per-turn cost at each history size, measured in interleaved rounds (a round times a few
    turns at every size in turn), so a slow spell of a noisy machine hits all sizes alike."""
    sessions, feeds = {}, {}
    for size in sizes:
        session = Session().use_lite(chars=4000)
        session.set_settings("session.resize.every_n_turns", 0)
        for i, message in enumerate(conversation(size)):
            session.append_message(message)
            if i % 1000 == 999:
                session.resize()
        session.resize()
        sessions[size], feeds[size] = session, iter(conversation(turns, start=10**6 + size))
    times: dict[int, list[float]] = {size: [] for size in sizes}
    batch = 10
    for _ in range(turns // batch):
        for size in sizes:
            start = time.process_time()  # CPU time, as the label says (the machine is shared)
            for _ in range(batch):
                _turn(sessions[size], feeds[size])
            times[size].append((time.process_time() - start) / batch)
    per_turn = {size: statistics.median(values) for size, values in times.items()}
    base = per_turn[sizes[0]]
    print("  char accounting (append + judge; never resized: past its limit the judge decides every turn), CPU: " + " | ".join(f"{s:,}: {t * 1e6:.1f} us = {t / base:.2f}x" for s, t in per_turn.items())
          + f" (goal: {sizes[-1]:,} / {sizes[0]:,} <= 1.2)")


def append_judge_vs_encode(size: int, turns: int) -> None:
    """append + judge with the exact counter / one tiktoken encode of the message's text: the
    same definition, figure and label as ``bench_tokens`` section 1 (its ``per_turn``)."""
    per_turn([size], turns, 1, indent="  ")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="smaller sizes and fewer repetitions")
    args = parser.parse_args()
    big = 20_000 if args.quick else 100_000
    print("1. resize (the graph run node by node, no Pregel, and through Pregel) vs a bare 3-node LangGraph invoke (the goal's baseline) "
          "and a bare 1-node one (the run's shape) (CPU time)")
    resize_vs_invoke(big, 200 if args.quick else 400)
    print("2. a 4,000-token window after every message vs trim_messages(strategy='last') (CPU time)")
    for texts in ("short", "realistic"):
        for size in (1_000, 10_000):
            window_vs_trim(size, 100 if args.quick else 300, texts)
    print("3. SessionManager.get_or_create of a stored session (lazy) and a full load (every message read)")
    loads([1_000, 10_000, big], 3 if args.quick else 7)
    print("4. memory per message")
    memory(5_000 if args.quick else 20_000)
    rss(big)
    if os.environ.get("SESSION_GRAPH_BENCH_1M"):
        rss(1_000_000)
    print("5. append + judge per message")
    append_judge([100, 10_000, big], 300 if args.quick else 1000)
    append_judge_vs_encode(10_000, 400 if args.quick else 2000)


if __name__ == "__main__":
    main()
