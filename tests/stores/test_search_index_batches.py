"""The JSONL store writes its terms files in batches (issue 25): a save carries no index work
until the log is ``batch_bytes`` past what the terms file covers; a search catches a terms file
behind its log up first, and ``close`` writes it up to the log. A process that dies with its
index behind loses nothing: the next search indexes what is missing from the log."""

from __future__ import annotations

from pathlib import Path
import subprocess
import sys
import textwrap

from session_graph import SessionManager
from session_graph.retrieval.tokenize import query_terms
from session_graph.stores import JsonlStore
from session_graph.stores.search_terms import tail_of, terms_path

WORDS = query_terms("invoice number0 number7 number19 glacier kettle")


def turns(manager: SessionManager, key: str, count: int, first: int = 0) -> None:
    for turn in range(first, first + count):
        session = manager.get_or_create(key)
        session.append_message({"role": "user", "content": f"question {turn} about the invoice number{turn}"})
        session.append_message({"role": "assistant", "content": f"answer {turn}: the glacier kettle{turn}"})
        manager.save(session)


def rebuilt(root: Path) -> tuple[dict, list]:
    for path in root.rglob("*.terms"):
        path.unlink()
    index = JsonlStore(root).search_index
    return index.stats("default"), index.rank("default", WORDS, 50)


def covered(root: Path, key: str) -> int:
    return tail_of(terms_path(next(root.rglob(f"{key}.jsonl"))))[0]  # type: ignore[index]


def test_saves_leave_the_index_behind_and_a_search_catches_it_up(tmp_path: Path) -> None:
    root = tmp_path / "j"
    manager = SessionManager(JsonlStore(root))
    turns(manager, "k", 20)
    log = next(root.rglob("k.jsonl"))
    assert covered(root, "k") == 0 < log.stat().st_size  # twenty saves, no index work: the header only
    live = manager.store.search_index
    ranked = live.rank("default", WORDS, 50)
    assert {("k", 0), ("k", 14), ("k", 39)} <= set(dict(ranked))  # every message found
    assert covered(root, "k") == log.stat().st_size  # and the search wrote the terms up to the log
    assert (live.stats("default"), ranked) == rebuilt(root)


def test_by_default_no_save_indexes_however_far_the_log_runs_ahead(tmp_path: Path) -> None:
    root = tmp_path / "j"
    manager = SessionManager(JsonlStore(root))
    session = manager.get_or_create("k")
    for turn in range(60):  # ~115 KB of log: past any batch a save would have written
        session.append_message({"role": "user", "content": f"question {turn} about the invoice number{turn} " + "x" * 1000})
        session.append_message({"role": "assistant", "content": f"answer {turn}: the glacier kettle{turn}"})
        manager.save(session)
    log = next(root.rglob("k.jsonl"))
    assert log.stat().st_size > 100 * 1024 and covered(root, "k") == 0  # the header only: no save paid for the index
    hits = manager.search("invoice number59", k=1)
    assert (hits[0].key, hits[0].seq) == ("k", 118) and covered(root, "k") == log.stat().st_size


def test_a_batch_is_written_once_the_log_is_far_enough_ahead(tmp_path: Path) -> None:
    root = tmp_path / "j"
    manager = SessionManager(JsonlStore(root))
    manager.store.search_index.batch_bytes = 4096
    turns(manager, "k", 1)
    log = next(root.rglob("k.jsonl"))
    assert covered(root, "k") == 0
    ends = []
    for turn in range(1, 12):
        turns(manager, "k", 1, turn)
        ends.append(covered(root, "k"))
    assert 0 < ends[-1] <= log.stat().st_size and len(set(ends)) > 2  # written in batches, several of them
    assert all(log.stat().st_size - end < 4096 for end in ends[-1:])  # never more than a batch behind
    manager.store.search_index.batch_bytes = 0  # every save indexes (the store before batches)
    turns(manager, "k", 1, 12)
    assert covered(root, "k") == log.stat().st_size
    live = manager.store.search_index
    assert (live.stats("default"), live.rank("default", WORDS, 50)) == rebuilt(root)


def test_close_writes_the_index_up_to_the_log(tmp_path: Path) -> None:
    root = tmp_path / "j"
    manager = SessionManager(JsonlStore(root))
    turns(manager, "a", 3)
    turns(manager, "b", 2)
    assert covered(root, "a") == covered(root, "b") == 0
    manager.close()
    for key in ("a", "b"):
        assert covered(root, key) == next(root.rglob(f"{key}.jsonl")).stat().st_size
    turns(manager, "b", 1, 2)  # pending again, then deleted: close indexes nothing and makes nothing again
    manager.delete("b")
    manager.close()
    assert not list(root.rglob("b.jsonl")) and not list(root.rglob("b.terms"))


def test_a_process_killed_with_its_index_behind_loses_no_message(tmp_path: Path) -> None:
    root = tmp_path / "j"
    script = textwrap.dedent(f"""
        import os, sys
        sys.path.insert(0, {str(Path(__file__).resolve().parents[2])!r})
        from session_graph import SessionManager
        from session_graph.stores import JsonlStore
        manager = SessionManager(JsonlStore({str(root)!r}))
        for turn in range(20):
            session = manager.get_or_create("k")
            session.append_message({{"role": "user", "content": f"question {{turn}} about the invoice number{{turn}}"}})
            session.append_message({{"role": "assistant", "content": f"answer {{turn}}: the glacier kettle{{turn}}"}})
            manager.save(session)
        os._exit(0)  # killed: no close, the terms file stays behind its log
    """)
    subprocess.run([sys.executable, "-c", script], check=True, timeout=120)
    assert covered(root, "k") < next(root.rglob("k.jsonl")).stat().st_size
    manager = SessionManager(JsonlStore(root))
    turns(manager, "k", 1, 20)  # a later process writes on, the index still behind
    hits = manager.search("invoice number19", k=1)
    assert (hits[0].key, hits[0].seq) == ("k", 38)
    live = manager.store.search_index
    assert {("k", s) for s in (0, 14, 39, 41)} <= set(dict(live.rank("default", WORDS + query_terms("number20"), 50)))
    assert (live.stats("default"), live.rank("default", WORDS, 50)) == rebuilt(root)
