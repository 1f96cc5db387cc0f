"""Two processes committing one session with a non-file memory store run the model once.

The memory store here is LangGraph's SqliteStore (shared by both processes; it has no lock
other processes see), so only the commit lease in the session store keeps the second process
from summarising and mining the same archive again.
"""

from __future__ import annotations

from pathlib import Path
import subprocess
import sys
import textwrap
import time

from langchain_core.messages import AIMessage, HumanMessage
import pytest
from stores_util import fresh_tenant, store_spec

from session_graph.stores import SessionManager, open_store
from session_graph.stores.lease import CommitLease

WORKER = textwrap.dedent('''
    import json, os, pathlib, sqlite3, sys, time
    from langchain_core.language_models.fake_chat_models import FakeListChatModel
    from langgraph.store.sqlite import SqliteStore
    from session_graph.memory import MemoryConfig
    from session_graph.stores import SessionManager, open_store
    spec, memory_file, calls_file, barrier, tenant = sys.argv[1:6]

    class Counting(FakeListChatModel):
        def _call(self, *args, **kwargs):
            with open(calls_file, "a") as handle:
                handle.write(f"{os.getpid()}\\n")
            time.sleep(0.2)  # a slow provider: the other process arrives while this one is mid-commit
            return super()._call(*args, **kwargs)

    summary = "# Session Summary\\n**Overview**: tests: keep them fast | done"
    pref = {"category": "preferences", "key": "testing", "abstract": "Prefers fast tests", "content": "Fast tests."}
    store = SqliteStore(sqlite3.connect(memory_file, check_same_thread=False, isolation_level=None, timeout=30))
    store.setup()
    memory = MemoryConfig(store=store, user="alice", agent="coder")
    manager = SessionManager(open_store(spec), memory=memory, tenant=tenant)
    pathlib.Path(barrier, str(os.getpid())).touch()
    deadline = time.monotonic() + 120
    while len(os.listdir(barrier)) < 2 and time.monotonic() < deadline:
        time.sleep(0.005)
    session = manager.get_or_create("k")
    session.handlers.model = Counting(responses=[summary, json.dumps({"memories": [pref]})] * 3)
    result = manager.commit(session)
    print(json.dumps({"status": result["status"], "archive": result["archive"]}))
''')


@pytest.mark.parametrize("kind", ["jsonl", "sqlite", "postgres"])
def test_two_processes_committing_one_session_run_the_model_once(kind: str, tmp_path: Path) -> None:
    spec, tenant = store_spec(kind, tmp_path), fresh_tenant()
    manager = SessionManager(open_store(spec), tenant=tenant)
    session = manager.get_or_create("k")
    session.append_message(HumanMessage(content="I like fast tests."))
    session.append_message(AIMessage(content="Noted."))
    manager.save(session)
    manager.close()  # its pool too: the workers race with stores of their own
    (tmp_path / "barrier").mkdir()
    calls = tmp_path / "calls"
    args = [spec, str(tmp_path / "memory.sqlite3"), str(calls), str(tmp_path / "barrier"), tenant]
    # the memory store's tables, made once before the race
    import sqlite3

    from langgraph.store.sqlite import SqliteStore

    SqliteStore(sqlite3.connect(tmp_path / "memory.sqlite3", isolation_level=None)).setup()
    procs = [subprocess.Popen([sys.executable, "-c", WORKER, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for _ in range(2)]
    outputs = []
    for proc in procs:
        out, err = proc.communicate(timeout=240)
        assert proc.returncode == 0, err
        outputs.append(out.strip().splitlines()[-1])
    statuses = sorted(__import__("json").loads(o)["status"] for o in outputs)
    assert statuses == ["committed", "skipped"], outputs  # the second found the archive done
    pids = calls.read_text().split()
    assert len(pids) == 2 and len(set(pids)) == 1  # summary + extraction, by one process only
    with SessionManager(open_store(spec), tenant=tenant) as reader:
        stored = reader.get("k")
    assert list(stored.state.archives["done"]) == ["archive_001"] and not stored.state.archives.get("pending")


def test_a_lease_is_exclusive_renewable_and_expires(tmp_path: Path) -> None:
    store = open_store(str(tmp_path / "store"))
    first = CommitLease(store, "default", "k", ttl=0.3)
    second = CommitLease(store, "default", "k", ttl=0.3, wait=0.1)
    assert first.try_acquire() and not second.try_acquire()
    first.renew()
    assert not second.try_acquire()
    time.sleep(0.35)  # the holder died: no renewal, the lease expires
    assert second.try_acquire() and not first.try_acquire()
    second.release()
    assert first.try_acquire()
    with pytest.raises(Exception, match="committing session 'k'"):
        second.acquire(poll=0.01)
    assert SessionManager(store).list_sessions() == []  # leases never show up as sessions
