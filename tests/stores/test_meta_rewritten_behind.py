"""A meta file rewritten behind a store that holds the session's log open, the log left as it
was (same file, same size): a meta-only write that no writer of this version makes, but a newer
session_graph, a migration or a hand edit can. The store's next save must still see it: refuse
a newer schema and write nothing (README: "a document from a newer schema fails clearly and
writes nothing"), and merge another writer's change instead of writing over it. Skipping the
meta file's ``stat`` when the held log is unchanged (tried as ``MetaCache.unchecked``) appended on the
state this store cached: the newer session was written into, and the other writer's version
and metadata were overwritten."""

from __future__ import annotations

import json
from pathlib import Path
import warnings

import pytest

from session_graph import SessionManager
from session_graph._base.files import encode_name
from session_graph.errors import StoreError
from session_graph.stores import JsonlStore


def _held(tmp_path: Path) -> tuple[JsonlStore, SessionManager, object, Path, Path]:
    store = JsonlStore(tmp_path)
    manager = SessionManager(store)
    session = manager.get_or_create("k")
    for i in range(2):  # the second save appends: the log is held open, its state cached
        session.append_message({"role": "user", "content": f"q{i}"})
        manager.save(session)
    log = tmp_path / "default" / (encode_name("k") + ".jsonl")
    return store, manager, session, log, log.with_name(encode_name("k") + ".meta.json")


def _rewrite_meta(log: Path, meta: Path, **changes: object) -> None:
    snapshot = JsonlStore(log.parent.parent).read("default", "k")
    assert snapshot is not None
    meta.write_text(json.dumps({**snapshot.state, **changes, "bytes": log.stat().st_size}))  # the log untouched


def test_a_meta_file_a_newer_version_rewrote_is_refused_by_a_store_holding_the_log(tmp_path: Path) -> None:
    _, manager, session, log, meta = _held(tmp_path)
    _rewrite_meta(log, meta, schema=99)
    before = log.read_bytes()
    session.append_message({"role": "user", "content": "q2"})  # type: ignore[attr-defined]
    with pytest.raises(StoreError, match="newer session_graph"):
        manager.save(session)  # type: ignore[arg-type]
    assert log.read_bytes() == before


def test_another_writers_meta_only_change_is_merged_not_written_over(tmp_path: Path) -> None:
    _, manager, session, log, meta = _held(tmp_path)
    stored = JsonlStore(tmp_path).version("default", "k")
    assert stored == 2
    _rewrite_meta(log, meta, version=7, metadata={"owner": "ops"})
    session.append_message({"role": "user", "content": "q2"})  # type: ignore[attr-defined]
    manager.save(session)  # type: ignore[arg-type]
    assert JsonlStore(tmp_path).version("default", "k") == 8  # written on the other's state, not on the cached one
    session.metadata["mine"] = 1  # type: ignore[attr-defined]
    manager.save(session)  # type: ignore[arg-type]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        loaded = SessionManager(JsonlStore(tmp_path)).get("k")
    assert loaded is not None and loaded.metadata == {"owner": "ops", "mine": 1}
    assert [m.content for m in loaded.full_chat_history] == ["q0", "q1", "q2"]
