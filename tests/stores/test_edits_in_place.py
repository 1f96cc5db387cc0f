"""State a user edits in place (the memo at any depth, settings, metadata) moves the session's
revision, so a save writes it, a merge with another writer keeps it and the view shows it."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from langchain_core.messages import AIMessage, HumanMessage
import pytest

from session_graph import JsonlStore, SessionManager, SqliteStore


@pytest.fixture(params=["jsonl", "sqlite"])
def make_store(request: Any, tmp_path: Path) -> Any:
    if request.param == "jsonl":
        return lambda: JsonlStore(tmp_path / "jsonl")
    return lambda: SqliteStore(tmp_path / "s.db")


def stored(make_store: Any) -> Any:
    session = SessionManager(make_store()).get("k")
    assert session is not None
    return session


def test_memo_edits_reach_the_store_with_and_without_appends(make_store: Any) -> None:
    manager = SessionManager(make_store())
    session = manager.get_or_create("k")
    session.append_message(HumanMessage(content="hi", id="h1"))
    manager.save(session)
    before = session.revision
    session.memo["x"] = 1  # top level, nothing else changed
    assert session.revision == before + 1 and session.revision == before + 1  # moved once per edit
    manager.save(session)
    assert stored(make_store).memo == {"x": 1}
    session.memo["facts"] = []
    session.append_message(HumanMessage(content="again", id="h2"))
    manager.save(session)
    session.memo["facts"].append("tea")  # nested, in place
    manager.save(session)
    session.memo["facts"].append("green")  # nested, with an append (the append-only save path)
    session.append_message(AIMessage(content="ok", id="a1"))
    manager.save(session)
    assert stored(make_store).memo == {"x": 1, "facts": ["tea", "green"]}


def test_settings_set_and_metadata_edits_reach_the_store(make_store: Any) -> None:
    manager = SessionManager(make_store())
    session = manager.get_or_create("k")
    session.append_message(HumanMessage(content="hi", id="h1"))
    manager.save(session)
    session.settings.set("session.limit.tokens", 1234)
    manager.save(session)
    assert stored(make_store).settings.resolved().tokens == 1234
    session.metadata["owner"] = {"name": "ada"}
    manager.save(session)
    session.metadata["owner"]["name"] = "grace"  # nested, in place
    manager.save(session)
    assert stored(make_store).metadata == {"owner": {"name": "grace"}}


def test_a_merge_with_another_writer_keeps_edits_in_place(make_store: Any) -> None:
    manager = SessionManager(make_store())
    session = manager.get_or_create("k")
    session.memo["facts"] = ["tea"]
    session.metadata["tags"] = ["a"]
    session.append_message(HumanMessage(content="hi", id="h1"))
    manager.save(session)
    other = SessionManager(make_store())
    theirs = other.get("k")
    assert theirs is not None
    theirs.memo["city"] = "Oslo"  # the other writer edits another key, and nested metadata
    theirs.append_message(HumanMessage(content="theirs", id="o1"))
    other.save(theirs)
    session.memo["facts"].append("coffee")  # mine: nested, in place
    session.metadata["tags"].append("b")
    session.append_message(HumanMessage(content="mine", id="h2"))
    manager.save(session)  # merges under the store's lock
    loaded = stored(make_store)
    assert loaded.memo == {"facts": ["tea", "coffee"], "city": "Oslo"}
    assert loaded.metadata == {"tags": ["a", "b"]}
    assert [m.id for m in loaded.full_chat_history] == ["h1", "o1", "h2"]
    assert session.memo == loaded.memo  # the merge is what the session holds too


def test_a_memo_edit_in_place_reaches_the_view() -> None:
    from session_graph import Session

    session = Session().use_memo()
    session.memo["facts"] = ["tea"]
    session.append_message(HumanMessage(content="hi", id="h1"))
    first = session.view()
    assert "tea" in str(first.messages) and "coffee" not in str(first.messages)
    session.memo["facts"].append("coffee")
    assert "coffee" in str(session.view().messages)


def test_a_history_list_edited_in_place_is_refused_loudly_not_lost(make_store: Any) -> None:
    from session_graph.errors import MessageError

    manager = SessionManager(make_store())
    session = manager.get_or_create("k")
    session.append_message(HumanMessage(content="hi", id="h1"))
    manager.save(session)
    session.full_chat_history.append(HumanMessage(content="sneaked in", id="h2"))  # not through append_message
    with pytest.raises(MessageError, match="append_message"):
        manager.save(session)
    with pytest.raises(MessageError, match="edited in place"):
        session.view()
    session.full_chat_history.pop()  # put back: the session works again, nothing stored was touched
    session.append_message(HumanMessage(content="properly", id="h3"))
    manager.save(session)
    assert [m.id for m in stored(make_store).full_chat_history] == ["h1", "h3"]


def test_a_view_list_edited_by_its_caller_does_not_reach_the_next_view() -> None:
    from session_graph import Session

    session = Session()
    session.append_message(HumanMessage(content="hi", id="h1"))
    first = session.view()
    assert session.view() is first  # unchanged: the same view, O(1)
    first.messages.append(AIMessage(content="added by the caller", id="x"))
    assert [m.id for m in session.view().messages] == ["h1"]
    again = session.view()
    again.messages[-1] = AIMessage(content="replaced by the caller", id="y")
    assert [m.id for m in session.view().messages] == ["h1"]


def test_a_save_compares_the_memo_and_metadata_once(make_store: Any, monkeypatch: Any) -> None:
    """Each read of ``revision`` encodes the memo and the metadata (a 100 KB memo: ~100 us each):
    the per-turn save (sync at once, async through its flow) reads it once, not once per check."""
    from session_graph._base import edits

    manager = SessionManager(make_store())
    session = manager.get_or_create("k")
    session.memo["facts"] = [f"fact {n}" for n in range(50)]
    session.append_message(HumanMessage(content="hi", id="h0"))
    manager.save(session)
    encoded: list[Any] = []
    real = edits.fingerprint
    monkeypatch.setattr(edits, "fingerprint", lambda value: encoded.append(value) or real(value))
    for n in range(1, 4):
        session.append_message(HumanMessage(content=f"q{n}", id=f"h{n}"))
        encoded.clear()
        manager.save(session)
        assert sum(value is session.memo for value in encoded) == 1
    session.append_message(HumanMessage(content="async", id="h9"))
    encoded.clear()
    asyncio.run(manager.asave(session))
    assert sum(value is session.memo for value in encoded) == 1
    assert [m.id for m in stored(make_store).full_chat_history] == ["h0", "h1", "h2", "h3", "h9"]


@pytest.mark.parametrize("which", ["full_chat_history", "current_chat_history"])
def test_a_last_message_replaced_in_place_is_refused_not_silently_unsaved(make_store: Any, which: str) -> None:
    """Replacing a history's last message (or popping it and appending another) keeps its length:
    refused like any list edit, not a save that skips it while the view shows it."""
    from session_graph.errors import MessageError

    manager = SessionManager(make_store())
    session = manager.get_or_create("k")
    session.append_message(HumanMessage(content="hi", id="h1"))
    session.append_message(AIMessage(content="wrong answer", id="a1"))
    manager.save(session)
    history = getattr(session, which)
    original = history[-1]
    history[-1] = AIMessage(content="fixed answer", id="a1")
    with pytest.raises(MessageError, match="last message replaced"):
        manager.save(session)
    with pytest.raises(MessageError, match="edited in place"):
        session.view()
    history.pop()
    history.append(AIMessage(content="another", id="a2"))
    with pytest.raises(MessageError, match="append_message"):
        manager.save(session)
    history[-1] = original  # put back: the session works again, nothing stored was touched
    manager.save(session)
    assert [m.content for m in stored(make_store).full_chat_history] == ["hi", "wrong answer"]


def test_a_session_edited_wrongly_does_not_break_the_managers_other_sessions(make_store: Any) -> None:
    """The cache's eviction reads each cached session's revision: one whose history was edited in
    place (its own save and view refuse it) must not make every other session's get and save fail."""
    from session_graph.errors import MessageError

    manager = SessionManager(make_store(), cache_size=2)
    bad = manager.get_or_create("bad")
    bad.append_message(HumanMessage(content="hi", id="b1"))
    manager.save(bad)
    bad.full_chat_history.append(HumanMessage(content="sneaked in", id="b2"))  # not through append_message
    for n in range(3):  # the cache is full: each new session's remember looks for an entry to evict
        other = manager.get_or_create(f"k{n}")
        other.append_message(HumanMessage(content="fine", id=f"m{n}"))
        manager.save(other)
        assert [m.id for m in SessionManager(make_store()).get(f"k{n}").full_chat_history] == [f"m{n}"]  # type: ignore[union-attr]
    with pytest.raises(MessageError, match="bad"):
        manager.save(bad)  # still refused, by name, to its own caller


def test_a_view_list_edited_in_its_middle_does_not_reach_the_next_view() -> None:
    """A caller that replaces a middle message of ``view().messages`` (say, a redaction of its own)
    must not have that edit handed to the next model call: the view's own messages come back."""
    from session_graph import Session

    session = Session()
    for n in range(3):
        session.append_message(HumanMessage(content=f"q{n}", id=f"h{n}"))
        session.append_message(AIMessage(content=f"a{n}", id=f"a{n}"))
    first = session.view()
    ids = [m.id for m in first.messages]
    first.messages[2] = AIMessage(content="edited by the caller", id="x")  # the ends stay
    assert [m.id for m in session.view().messages] == ids
    again = session.view()
    again.messages.insert(1, AIMessage(content="inserted", id="y"))
    again.messages.pop(3)  # same length, same ends
    assert [m.id for m in session.view().messages] == ids


def test_a_merge_keeps_both_writers_nested_metadata_and_my_deletions(make_store: Any) -> None:
    """Metadata merges like the memo, key by key at any depth: their new nested key survives my
    edit of another key of the same dict, and a key I removed that they left alone stays removed
    (a key both changed: mine, as before)."""
    manager = SessionManager(make_store())
    session = manager.get_or_create("k")
    session.metadata.update({"owner": {"name": "ada", "team": "core"}, "old": 1, "both": 0})
    session.append_message(HumanMessage(content="hi", id="h1"))
    manager.save(session)
    other = SessionManager(make_store())
    theirs = other.get("k")
    assert theirs is not None
    theirs.metadata["owner"]["email"] = "ada@example.org"  # a nested key of theirs
    theirs.metadata["both"] = "theirs"
    theirs.append_message(HumanMessage(content="theirs", id="o1"))
    other.save(theirs)
    session.metadata["owner"]["team"] = "infra"  # mine: another key of the same dict
    del session.metadata["old"]
    session.metadata["both"] = "mine"
    session.append_message(HumanMessage(content="mine", id="h2"))
    manager.save(session)
    expected = {"owner": {"name": "ada", "team": "infra", "email": "ada@example.org"}, "both": "mine"}
    assert stored(make_store).metadata == expected and session.metadata == expected


def test_an_edit_in_place_after_an_import_survives_a_merge(make_store: Any) -> None:
    """An imported session is cached with the document it was written with as its base; that base
    must not share the session's memo or metadata (it did: the import cached it without the copy
    a save or load makes), else an edit in place after the import equals the base, counts as no
    change of mine, and a merge with another writer drops it."""
    manager = SessionManager(make_store())
    key = manager.import_nanobot(Path(__file__).parents[1] / "data" / "nanobot" / "0.2.2" / "sessions")[0]
    session = manager.get(key)
    assert session is not None
    session.memo["facts"] = {"n": 2}  # mine, in place, no save since the import
    session.metadata["tags"] = {"t": 2}
    other = SessionManager(make_store())
    theirs = other.get(key)
    assert theirs is not None
    theirs.append_message(HumanMessage(content="theirs", id="o1"))
    other.save(theirs)
    session.append_message(HumanMessage(content="mine", id="m1"))
    manager.save(session)
    loaded = stored_key(make_store, key)
    assert loaded.memo["facts"] == {"n": 2} and loaded.metadata["tags"] == {"t": 2}
    assert [m.content for m in loaded.full_chat_history[-2:]] == ["theirs", "mine"]


def stored_key(make_store: Any, key: str) -> Any:
    session = SessionManager(make_store()).get(key)
    assert session is not None
    return session
