"""Persisting a turn and loading a session, per store, against rewriting the whole file.

Run: ``python bench/bench_stores.py`` (set ``SESSION_GRAPH_PG_DSN`` to include Postgres;
``bash .ci/postgres.sh`` starts a throwaway server). For histories of 1,000 and 100,000
messages it prints the wall time to persist one turn (two messages, fsynced) with each store,
and the ratio to rewriting the whole JSONL transcript on every save (what nanobot's
SessionManager does), measured in the same run on the same disk. Then the CPU time of one
save at 100,000 over at 1,000 messages, sizes alternated, lazy and eager. Then the time to load a
100,000-message session in full (eager: ``bench_speed`` times the lazy load). Then the resident
memory (RSS) of a session loaded from each store, eagerly (its state names no window: every
record read at once) and lazily then paged in (``full_chat_history.load()``), against the same
session appended in a fresh process, each in its own fresh process (``--rss-sizes``; goal <= 1.1
at 100,000). Then the CPU of a save that merges (another writer saved one turn since this one
read) at 100,000 over 1,000 messages, sizes alternated. Last, ``--writers`` processes (default
4) each append and save ``--writer-turns`` turns (default 500) to one shared key at once: the
stored history, window and turns afterwards, the merges the writers made, and the seconds it took.
Then 3 processes x ``--fold-turns`` turns on one key in memo mode through the agent step, with a
fake memo model: its calls and the messages sent to it per stored message, with the fold lease
and without it (before). RSS at 1,000,000 messages is in the full run only (``--rss-sizes``:
~15 min more and ~1.5 GB per measuring process; ``run_all.py --quick`` passes 100000).
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
import textwrap
import time

from langchain_core.messages import AIMessage, HumanMessage, message_to_dict

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the checkout this bench lives in, not an installed copy
from session_graph.stores import JsonlStore, PostgresStore, SessionManager, SessionStore, SqliteStore, open_store
from session_graph.stores.codec import message_record

TEXT = "The session keeps the full history and sends only the window to the model. "


def _messages(start: int, count: int) -> list:
    return [(HumanMessage if i % 2 == 0 else AIMessage)(content=f"{i}: {TEXT}", id=f"m{i}") for i in range(start, start + count)]


def _stores(root: Path) -> dict[str, SessionStore]:
    stores: dict[str, SessionStore] = {"jsonl": JsonlStore(root / "jsonl"), "sqlite": SqliteStore(root / "s.sqlite3")}
    if os.environ.get("SESSION_GRAPH_PG_DSN"):
        stores["postgres"] = PostgresStore(os.environ["SESSION_GRAPH_PG_DSN"])
    return stores


def rewrite_per_save(root: Path, size: int, turns: int) -> float:
    """The baseline: every save rewrites the whole transcript (and fsyncs it)."""
    path = root / "rewrite.jsonl"
    messages = [message_to_dict(m) for m in _messages(0, size)]
    times = []
    for turn in range(turns):
        messages += [message_to_dict(m) for m in _messages(size + 2 * turn, 2)]
        t0 = time.perf_counter()
        with open(path, "w") as handle:
            for message in messages:
                handle.write(json.dumps(message) + "\n")
            handle.flush()
            os.fsync(handle.fileno())
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def persist_turn(store: SessionStore, tenant: str, size: int, turns: int) -> tuple[float, float]:
    """(seconds to load the session, median seconds to persist one turn)."""
    store.write(tenant, "bench", [message_record(m, "2026-11-22T00:00:00Z") for m in _messages(0, size)],
                {"updated_at": "2026-11-22T00:00:00Z", "window": []})
    manager = SessionManager(store, tenant=tenant)
    t0 = time.perf_counter()
    session = manager.get_or_create("bench")
    load = time.perf_counter() - t0
    times = []
    for turn in range(turns):
        for message in _messages(10**7 + 2 * turn, 2):
            session.append_message(message)
        t0 = time.perf_counter()
        manager.save(session)
        times.append(time.perf_counter() - t0)
    return load, statistics.median(times)


def persist_flat(stores: dict[str, SessionStore], small: int, big: int, rounds: int) -> None:
    """CPU per save of one turn at ``big`` over at ``small`` messages, per store, with the
    session loaded lazily (the middle of its history left in the store) and eagerly (all of it
    in memory): the two sizes' saves alternate, so a slow spell of the machine hits both alike."""
    print(f"\npersist one turn (2 messages, fsync on), CPU time, {big:,} / {small:,} messages, sizes alternated, "
          f"median of {rounds} rounds:")
    for name, store in stores.items():
        for mode in ("lazy", "eager"):
            sessions = []
            for size in (small, big):
                tenant = f"flat-{mode}-{size}-{os.getpid()}"
                store.write(tenant, "bench", [message_record(m, "2026-11-22T00:00:00Z") for m in _messages(0, size)],
                            {"updated_at": "2026-11-22T00:00:00Z", "window": []})
                manager = SessionManager(store, tenant=tenant)
                session = manager.get_or_create("bench")
                if mode == "eager":
                    getattr(session.full_chat_history, "load", lambda: None)()
                sessions.append((manager, session))
            times: list[list[float]] = [[], []]
            for turn in range(rounds + 2):
                for which, (manager, session) in enumerate(sessions):
                    for message in _messages(10**7 + 2 * turn, 2):
                        session.append_message(message)
                    t0 = time.process_time()
                    manager.save(session)
                    if turn >= 2:  # the first saves write the whole state document
                        times[which].append(time.process_time() - t0)
            low, high = statistics.median(times[0]), statistics.median(times[1])
            print(f"{name:>9} {mode:>5}: {high * 1e3:.3f} ms / {low * 1e3:.3f} ms = {high / low:.2f} (goal <= 1.2)")


RSS = textwrap.dedent('''
import gc, resource, sys
sys.path[:0] = [sys.argv[5], sys.argv[5] + "/bench"]
from bench_speed import conversation
from session_graph import Session, SessionManager
from session_graph.stores import JsonlStore, SqliteStore
import session_graph.stores.codec, session_graph.stores.sql  # imported before the baseline is read

def rss():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * resource.getpagesize()

size, kind, how, root = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
gc.collect()
before = rss()
if kind == "appended":  # the messages made in this process, as an app would, then appended
    session = Session()
    session.set_settings("session.resize.every_n_turns", 0)
    for message in conversation(size):
        session.append_message(message)
    if how == "lazy":
        session.use_lite(chars=4000)
        session.resize()
else:
    store = JsonlStore(root + "/jsonl", fsync=False) if kind == "jsonl" else SqliteStore(root + "/s.sqlite3")
    session = SessionManager(store).get_or_create(how)
    history = session.full_chat_history
    assert (type(history).__name__ == "LazyHistory") == (how == "lazy")
    getattr(history, "load", lambda: None)()  # paged in: every message in memory
    assert len(history) == size
gc.collect()
print(rss() - before)
''')


def rss_loaded(sizes: list[int], root: Path) -> None:
    """RSS of a loaded session over the same session appended in process, per store and load,
    each measured in a fresh process (the store written once, by this one)."""
    here = str(Path(__file__).resolve().parents[1])
    sys.path[:0] = [str(Path(__file__).resolve().parent)]
    from bench_speed import conversation

    print("\nRSS of a session loaded from a store and paged in / the same session appended in process "
          "(each in a fresh process; conversation(): ~190-char turns, a tool call every 5th):")
    for size in sizes:
        folder = root / f"rss-{size}"
        for kind in ("jsonl", "sqlite"):
            store = JsonlStore(folder / "jsonl", fsync=False) if kind == "jsonl" else SqliteStore(folder / "s.sqlite3")
            for how in ("eager", "lazy"):  # lazy: a 4,000-char window, so a load reads record 0 and the window
                manager = SessionManager(store)
                session = manager.get_or_create(how)
                session.set_settings("session.resize.every_n_turns", 0)
                for message in conversation(size):
                    session.append_message(message)
                if how == "lazy":
                    session.use_lite(chars=4000)
                    session.resize()
                manager.save(session)
                del session, manager
            store.close()

        def run(kind: str, how: str, size: int = size, folder: Path = folder) -> int:
            done = subprocess.run([sys.executable, "-c", RSS, str(size), kind, how, str(folder), here],
                                  check=True, capture_output=True, text=True)
            return int(done.stdout.strip().splitlines()[-1])

        base = {how: run("appended", how) for how in ("eager", "lazy")}
        print(f"  {size:,} messages: appended in process {base['eager'] / size:.0f} B/msg "
              f"({base['lazy'] / size:.0f} B/msg with a 4,000-char window)")
        for kind in ("jsonl", "sqlite"):
            for how in ("eager", "lazy"):
                loaded = run(kind, how)
                note = " (the middle's index and sizes are built on first use; its arrival stamps stay in the store)" if how == "lazy" else ""
                print(f"  {size:,} messages: {kind:>6} {how:>5} load, paged in: {loaded / size:.0f} B/msg = "
                      f"{loaded / base[how]:.2f}x (goal <= 1.1){note}")


def merging_save(stores: dict[str, SessionStore], small: int, big: int, rounds: int) -> None:
    """CPU of a save that merges: before each, another writer (a second manager) saved one turn,
    so the save reads what it added and merges; 100k over 1k, the sizes alternated."""
    print(f"\na save that merges (another writer saved one turn since this one read), CPU time, {big:,} / {small:,} "
          f"messages, sizes alternated, median of {rounds} rounds:")
    for name, store in stores.items():
        pairs = []
        for size in (small, big):
            tenant = f"merge-{size}-{os.getpid()}"
            store.write(tenant, "bench", [message_record(m, "2026-11-22T00:00:00Z") for m in _messages(0, size)],
                        {"updated_at": "2026-11-22T00:00:00Z", "window": []})
            mine, other = SessionManager(store, tenant=tenant), SessionManager(store, tenant=tenant)
            pairs.append((mine, mine.get_or_create("bench"), other))
        times: list[list[float]] = [[], []]
        for turn in range(rounds + 2):
            for which, (mine, session, other) in enumerate(pairs):
                theirs = other.get_or_create("bench")
                for message in _messages(2 * 10**7 + 4 * turn, 2):
                    theirs.append_message(message)
                other.save(theirs)
                for message in _messages(2 * 10**7 + 4 * turn + 2, 2):
                    session.append_message(message)
                merges = mine.merges
                t0 = time.process_time()
                mine.save(session)
                elapsed = time.process_time() - t0
                assert mine.merges == merges + 1, "the save did not merge"
                if turn >= 2:
                    times[which].append(elapsed)
        low, high = statistics.median(times[0]), statistics.median(times[1])
        print(f"{name:>9}: {high * 1e3:.3f} ms / {low * 1e3:.3f} ms = {high / low:.2f} (goal <= 1.2)")


WRITER = textwrap.dedent('''
import sys
from session_graph.stores import SessionManager, open_store

spec, tenant, name, turns = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
manager = SessionManager(open_store(spec), tenant=tenant)
for i in range(turns):
    session = manager.get_or_create("shared")
    session.set_settings("session.resize.every_n_turns", 0)
    session.append_message({"role": "user", "content": f"{name}:{i}:q"})
    session.append_message({"role": "assistant", "content": f"{name}:{i}:a"})
    manager.save(session)
print(manager.merges)
''')


def concurrent_writers(specs: dict[str, str], writers: int, turns: int) -> None:
    print(f"\n{writers} processes x {turns} turns on one key (append + save each turn):")
    for name, spec in specs.items():
        tenant = f"w-{os.getpid()}-{name}"
        t0 = time.perf_counter()
        runs = [subprocess.Popen([sys.executable, "-c", WRITER, spec, tenant, f"p{n}", str(turns)], stdout=subprocess.PIPE, text=True,
                                 cwd=Path(__file__).resolve().parents[1])  # this checkout's session_graph, not an installed copy
                for n in range(writers)]
        merges = sum(int(run.communicate()[0] or 0) for run in runs)
        seconds = time.perf_counter() - t0
        store = open_store(spec)
        session = SessionManager(store, tenant=tenant).get("shared")
        store.close()
        assert session is not None
        history = [m.id for m in session.full_chat_history]
        window = [m.id for m in session.current_chat_history]
        print(f"{name:>9}: {len(history):,} messages stored, window == history: {window == history}, "
              f"turns {session.turns:,} (replies {writers * turns:,}), {merges:,} merges, {seconds:.1f} s")


FOLDER = textwrap.dedent('''
import sys
from session_graph import Session
from session_graph.integrations.binding import SessionBinding
from session_graph.stores import SessionManager, open_store

spec, tenant, name, turns, lease = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5] == "lease"
calls = [0, 0]

def fold(memo, messages, attachments, settings):  # the memo model (a fake: no model is called)
    calls[0] += 1
    calls[1] += len(messages)
    return {"ids": [*memo.get("ids", []), *(m.id for m in messages)]}

def factory(key):
    session = Session(key, memo_update_handler=fold)
    session.set_settings("session.resize.every_n_turns", 0)
    return session.use_memo(messages=6)

if not lease:  # as before the fold lease: every writer folds what it sees
    SessionBinding._shared_fold = lambda self, session: False
binding = SessionBinding(manager=SessionManager(open_store(spec), tenant=tenant, session_factory=factory))
config = {"configurable": {"thread_id": "shared"}}
for i in range(turns):
    binding.step([{"role": "user", "content": f"{name}:{i}:q", "id": f"{name}-{i}-q"},
                  {"role": "assistant", "content": f"{name}:{i}:a", "id": f"{name}-{i}-a"}], config, save=True)
print(calls[0], calls[1])
''')


def contended_folds(specs: dict[str, str], writers: int, turns: int) -> None:
    """Memo folds when ``writers`` processes run the agent step (``SessionBinding.step``) on one
    key: the model calls and the messages sent to them per stored message, with the fold lease
    (a writer folds only under the session's lease, after merging what others stored) and
    without it (every writer folds what it sees; the merge keeps one memo and drops the rest)."""
    print(f"\n{writers} processes x {turns} turns on one key in memo mode (6 messages) through the agent step, "
          "a fake memo model: its calls per 100 stored messages and messages sent to it per stored message (ideal 1.00):")
    for name, spec in specs.items():
        for lease in ("no-lease", "lease"):
            tenant = f"f-{os.getpid()}-{name}-{lease}"
            runs = [subprocess.Popen([sys.executable, "-c", FOLDER, spec, tenant, f"p{n}", str(turns), lease],
                                     stdout=subprocess.PIPE, text=True, cwd=Path(__file__).resolve().parents[1])
                    for n in range(writers)]  # cwd: this checkout's session_graph, not an installed copy
            outs = [run.communicate()[0].split() for run in runs]
            calls, sent = sum(int(o[0]) for o in outs), sum(int(o[1]) for o in outs)
            stored = writers * turns * 2
            label = "with the fold lease" if lease == "lease" else "without it (before)"
            print(f"{name:>9} {label:>20}: {calls * 100 / stored:.1f} calls per 100 messages, "
                  f"{sent / stored:.2f} messages sent per message")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,100000")
    parser.add_argument("--turns", type=int, default=30)
    parser.add_argument("--flat-rounds", type=int, default=60)
    parser.add_argument("--writers", type=int, default=4)
    parser.add_argument("--writer-turns", type=int, default=500)
    parser.add_argument("--rss-sizes", default="100000,1000000",
                        help="sizes of the RSS comparison (1,000,000: ~15 min more and ~1.5 GB per measuring process)")
    parser.add_argument("--merge-rounds", type=int, default=30)
    parser.add_argument("--fold-turns", type=int, default=100, help="turns per writer of the contended memo folds")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        stores = _stores(root)
        loads: dict[str, float] = {}
        print("persist one turn (2 messages, fsync on), wall time, median; baseline: rewrite the whole JSONL file per save")
        print(f"{'history':>9} {'store':>9} {'persist a turn':>15} {'rewrite whole file':>19} {'ratio':>7}")
        for size in (int(s) for s in args.sizes.split(",")):
            baseline = rewrite_per_save(root, size, max(3, args.turns // 10 if size > 10_000 else args.turns))
            for name, store in stores.items():
                load, turn = persist_turn(store, f"t{size}-{os.getpid()}", size, args.turns)
                loads[name] = load
                print(f"{size:>9,} {name:>9} {turn * 1e3:>12.2f} ms {baseline * 1e3:>16.1f} ms {baseline / turn:>6.0f}x")
        sizes = sorted(int(s) for s in args.sizes.split(","))
        persist_flat(stores, sizes[0], sizes[-1], args.flat_rounds)
        print(f"\nloading a {max(int(s) for s in args.sizes.split(',')):,}-message session with get_or_create, in full (eager: its "
              "state names no window to start from), wall time:")
        for name, seconds in loads.items():
            print(f"{name:>9}: {seconds:.2f} s")
        merging_save(stores, sizes[0], sizes[-1], args.merge_rounds)
        for store in stores.values():
            store.close()
        rss_loaded([int(s) for s in args.rss_sizes.split(",")], root)
        specs = {"jsonl": str(root / "jsonl"), "sqlite": str(root / "s.sqlite3")}
        if os.environ.get("SESSION_GRAPH_PG_DSN"):
            specs["postgres"] = os.environ["SESSION_GRAPH_PG_DSN"]
        concurrent_writers(specs, args.writers, args.writer_turns)
        contended_folds(specs, 3, args.fold_turns)


if __name__ == "__main__":
    main()
