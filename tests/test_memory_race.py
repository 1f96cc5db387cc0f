"""Racing commits in separate processes on one shared store converge on one item per fact
(issue 22): the file store and LangGraph's SqliteStore, whose writes are compare-and-set under
a cross-process owner lock."""

from __future__ import annotations

import multiprocessing
from pathlib import Path
from typing import Any

from memory_util import active, make_memory_store
import pytest
from test_memory_plans import Reader, pref, profile

from session_graph import Session
from session_graph.memory import MemoryConfig

WORDINGS = ["Theme: {} in the editor.", "Theme: {}, in the editor, please.", "Theme: {} (editor)."]


def _worker(kind: str, root: str, part: int, barrier: Any, out: Any) -> None:
    memory = MemoryConfig(store=make_memory_store(kind, Path(root)), user="alice", agent="coder")
    statuses = []
    for round_, value in enumerate(["dark", "light"]):
        barrier.wait()  # every process states the same value in the same round, at the same time
        for number in range(3):
            model = Reader(memories=[pref(WORDINGS[(part + number) % 3].format(value)),
                                     profile(f"Lives in {['Munich', 'Berlin'][round_]}.")])
            session = Session(f"p{part}-s{number}-r{round_}", model=model, memory=memory)
            session.append_message({"role": "user", "content": "facts"})
            statuses.append(session.commit()["status"])
    out.put(statuses)


@pytest.mark.parametrize("kind", ["file", "sqlite"])
def test_racing_processes_converge_on_one_item_per_fact(kind: str, tmp_path: Path) -> None:
    make_memory_store(kind, tmp_path)  # set up once
    context = multiprocessing.get_context("fork")
    barrier, out = context.Barrier(3), context.Queue()
    workers = [context.Process(target=_worker, args=(kind, str(tmp_path), n, barrier, out)) for n in range(3)]
    for worker in workers:
        worker.start()
    statuses = [status for _ in workers for status in out.get(timeout=120)]
    for worker in workers:
        worker.join(timeout=60)
    assert statuses == ["committed"] * 18
    store = make_memory_store(kind, tmp_path)
    (theme,) = active(store, ("user", "alice", "memories", "preferences")).values()
    assert "light" in theme["content"] and "dark" not in theme["content"]
    (about,) = active(store, ("user", "alice", "memories", "profile")).values()
    assert about["content"].splitlines() == ["- Lives in Berlin."]
