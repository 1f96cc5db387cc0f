"""Three processes commit one session while a fourth appends to it: every message is archived
exactly once, no archive is overwritten, and no memory is duplicated (JSONL and SQLite)."""

from __future__ import annotations

from pathlib import Path
import subprocess
import sys
import textwrap

import pytest
from stores_util import store_spec

from session_graph.memory import FileMemoryStore, MemoryConfig
from session_graph.stores import SessionManager, open_store

WORKER = textwrap.dedent('''
    import json, os, pathlib, sys, time
    from langchain_core.language_models.fake_chat_models import FakeListChatModel
    from session_graph.memory import FileMemoryStore, MemoryConfig
    from session_graph.stores import SessionManager, open_store
    spec, memory_root, role, rounds = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    summary = "# Session Summary\\n**Overview**: tests: keep them fast | done"
    pref = {"category": "preferences", "key": "testing", "abstract": "Prefers fast tests",
            "content": "The user prefers fast tests."}
    extraction = json.dumps({"memories": [pref]})
    decide = json.dumps({"decisions": [{"candidate": 0, "op": "skip", "targets": ["m1"]}]})
    memory = MemoryConfig(store=FileMemoryStore(memory_root, fsync=False), user="alice", agent="coder")
    manager = SessionManager(open_store(spec), memory=memory)
    barrier = pathlib.Path(memory_root).parent / "ready"  # start together: imports take seconds on a busy machine
    barrier.mkdir(exist_ok=True)
    (barrier / f"{role}-{os.getpid()}").touch()
    deadline = time.monotonic() + 120
    while len(list(barrier.iterdir())) < 4 and time.monotonic() < deadline:
        time.sleep(0.01)
    for i in range(rounds):
        session = manager.get_or_create("k")
        if role == "append":
            session.append_message({"role": "user", "content": f"question {i}", "id": f"q{i}"})
            session.append_message({"role": "assistant", "content": f"answer {i}", "id": f"a{i}"})
            manager.save(session)
        else:
            session.handlers.model = FakeListChatModel(responses=[summary, extraction, decide] * 2)
            result = manager.commit(session)
            assert result["status"] in ("committed", "skipped"), result
        time.sleep(0.005)
''')


@pytest.mark.slow  # several processes: opt-in locally (SESSION_GRAPH_SLOW_TESTS=1), on in CI
@pytest.mark.parametrize("kind", ["jsonl", "sqlite"])
def test_three_committers_and_an_appender_archive_each_message_once(kind: str, tmp_path: Path) -> None:
    spec, memory_root = store_spec(kind, tmp_path), str(tmp_path / "memory")
    manager = SessionManager(open_store(spec))
    first = manager.get_or_create("k")
    first.append_message({"role": "user", "content": "hello", "id": "seed"})
    manager.save(first)
    procs = [subprocess.Popen([sys.executable, "-c", WORKER, spec, memory_root, role, str(rounds)], stderr=subprocess.PIPE, text=True)
             for role, rounds in (("append", 40), ("commit", 8), ("commit", 8), ("commit", 8))]
    for proc in procs:
        _, err = proc.communicate(timeout=240)
        assert proc.returncode == 0, err[-3000:]
    memory = MemoryConfig(store=FileMemoryStore(memory_root, fsync=False), user="alice", agent="coder")
    final_manager = SessionManager(open_store(spec), memory=memory)
    final = final_manager.get_or_create("k")
    final_manager.commit(final)  # what the appender added after the last commit
    archives = final.state.archives
    assert archives.get("pending") == {}
    ranges = sorted((r["start"], r["end"]) for r in archives["done"].values())
    covered = [i for start, end in ranges for i in range(start, end)]
    assert covered == list(range(len(final.full_chat_history)))  # each message archived exactly once, in order
    names = sorted(archives["done"])
    # the workers start together, so commits race the appender and each other (several archives);
    # however many there are, no index is reused or skipped
    assert len(names) >= 3 and names == [f"archive_{i:03d}" for i in range(1, len(names) + 1)]
    items = memory.memory_store.search(("user", "alice", "memories", "preferences"), filter={"status": "active"}, limit=100)
    assert [i.key for i in items] == ["testing"]  # one active memory, however many commits restated it
