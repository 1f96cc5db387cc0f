"""The JSONL store's terms file is appended per save without reading its end back when this
store wrote it last; a file another writer (or a crash, or a rebuild) changed is read again."""

from __future__ import annotations

from pathlib import Path

from session_graph import SessionManager
from session_graph.retrieval.tokenize import query_terms
from session_graph.stores import JsonlStore
from session_graph.stores.search_index import terms_path


def rebuilt(root: Path, words: list[str]) -> tuple[dict, list]:
    for path in root.rglob("*.terms"):
        path.unlink()
    index = JsonlStore(root).search_index
    return index.stats("default"), index.rank("default", words, 50)


def test_two_writers_taking_turns_and_a_cut_index_keep_the_index_equal_to_a_rebuilt_one(tmp_path: Path) -> None:
    root = tmp_path / "j"
    one, two = SessionManager(JsonlStore(root)), SessionManager(JsonlStore(root))
    for turn in range(6):
        manager = one if turn % 2 == 0 else two
        session = manager.get_or_create("k")  # the other writer's lines are read in
        session.append_message({"role": "user", "content": f"question {turn} about the export number{turn}"})
        session.append_message({"role": "assistant", "content": f"answer {turn}: the cache key{turn}"})
        manager.save(session)
        manager.save(session)  # nothing new: no index line either
    path = terms_path(next(root.rglob("k.jsonl")))
    lines = path.read_bytes().splitlines(keepends=True)
    path.write_bytes(b"".join(lines[:-3]))  # cut behind the log (as a crash would): not appended onto
    session = one.get_or_create("k")
    session.append_message({"role": "user", "content": "a last question number99"})
    one.save(session)
    words = query_terms("export cache question number0 number5 number99 key3")
    live = one.store.search_index
    ranked = live.rank("default", words, 50)
    assert {("k", 0), ("k", 11), ("k", 12)} <= set(dict(ranked))
    assert (live.stats("default"), ranked) == rebuilt(root, words)
