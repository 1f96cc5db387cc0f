"""``SessionCache`` (stores/session_load.py): a manager's live sessions, LRU, never evicting unsaved changes."""

from __future__ import annotations

from session_graph import Session
from session_graph.stores.session_load import Entry, SessionCache


def entry(key: str, *, saved: bool) -> Entry:
    session = Session(key)
    return Entry(session, 1, 0, session.revision if saved else -1, "2026-01-01T00:00:00Z", {})


def test_the_oldest_saved_entry_is_evicted_and_unsaved_ones_never_are() -> None:
    cache = SessionCache(2)
    cache.remember("dirty", entry("dirty", saved=False))
    cache.remember("a", entry("a", saved=True))
    cache.remember("b", entry("b", saved=True))
    assert [e.session.id for e in cache] == ["dirty", "b"]  # "a" was the oldest saved one
    cache.remember("c", entry("c", saved=False))
    cache.remember("d", entry("d", saved=False))
    assert sorted(e.session.id for e in cache) == ["c", "d", "dirty"]  # over size: only unsaved entries left, all kept
    assert "dirty" in cache and len(cache) == 3


def test_use_moves_an_entry_to_the_newest_and_get_does_not() -> None:
    cache = SessionCache(2)
    cache.remember("a", entry("a", saved=True))
    cache.remember("b", entry("b", saved=True))
    assert cache.get("a") is not None
    cache.remember("c", entry("c", saved=True))  # get() did not save "a": it is evicted
    assert "a" not in cache
    cache.use("b")
    cache.remember("d", entry("d", saved=True))
    assert [e.session.id for e in cache] == ["b", "d"]
    assert cache.pop("b") is not None and cache.pop("b") is None
    cache.clear()
    assert len(cache) == 0 and list(cache) == []
