"""One damaged file is skipped and reported, never fatal, never a raw traceback.

- a damaged memory file (8 kinds) next to good ones: the owner's commits go on, the file is
  reported (``store.damaged``, a RuntimeWarning) and kept as it was;
- a JSONL record of an unknown message type: quarantined, the session loads;
- OpenViking and nanobot imports of bad UTF-8 or 100,000-deep nesting: a StoreError or
  DocumentError naming the file, nothing imported.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any
import warnings

from langchain_core.language_models.fake_chat_models import FakeListChatModel
from langchain_core.messages import AIMessage, HumanMessage
import pytest

from session_graph import DocumentError, Session, SessionManager, StoreError
from session_graph.memory import FileMemoryStore, MemoryConfig

SUMMARY = "# Session Summary\n**Overview**: editor themes | dark | done"
PREF = {"category": "preferences", "key": "editor_theme", "abstract": "Dark editor theme", "content": "Prefers a dark editor theme."}
DEEP = 100_000


def _front(head: dict[str, Any], body: str = "text") -> str:
    return "---\n" + json.dumps(head) + "\n---\n" + body


GOOD_HEAD = {"namespace": ["user", "alice", "memories", "preferences"], "key": "damaged", "value": {"status": "active"}}
DAMAGED: dict[str, Any] = {
    "no front matter": "just some text about the editor theme",
    "truncated": _front(GOOD_HEAD)[:30],
    "empty": "",
    "not UTF-8": b"---\n\xff\xfe editor theme \x80\n---\n",
    "a bad date": _front({**GOOD_HEAD, "created_at": "the day before yesterday"}),
    "a list value": _front({**GOOD_HEAD, "value": ["editor", "theme"]}),
    "deep nesting": "---\n" + "[" * DEEP + "]" * DEEP + "\n---\neditor theme",
    "a symlink": None,
}


@pytest.mark.parametrize("kind", list(DAMAGED))
def test_a_damaged_memory_file_is_skipped_and_the_commit_goes_on(tmp_path: Path, kind: str) -> None:
    store = FileMemoryStore(tmp_path / "memory", fsync=False)
    namespace = ("user", "alice", "memories", "preferences")
    store.put(namespace, "coffee", {"content": "Likes coffee and a dark editor theme.", "abstract": "coffee", "status": "active"})
    damaged = store.path_of(namespace, "damaged")
    content = DAMAGED[kind]
    if content is None:
        outside = tmp_path / "outside.md"
        outside.write_text(_front(GOOD_HEAD, "SECRET editor theme"))
        damaged.symlink_to(outside)
    elif isinstance(content, bytes):
        damaged.write_bytes(content)
    else:
        damaged.write_text(content)
    before = damaged.read_bytes() if not damaged.is_symlink() else ("link", str(damaged.readlink()))
    memory = MemoryConfig(store=store, user="alice", agent="coder")
    decide = json.dumps({"decisions": [{"candidate": 0, "op": "create"}]})
    model = FakeListChatModel(responses=[SUMMARY, json.dumps({"memories": [PREF]}), decide])
    session = Session("chat", model=model, memory=memory)
    session.append_message(HumanMessage(content="I like a dark editor theme."))
    session.append_message(AIMessage(content="Noted."))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = session.commit()
    assert result["status"] == "committed", result["errors"]
    assert "editor_theme" in result["memories"]["created"]
    assert str(damaged) in store.damaged and any("damaged memory file" in str(w.message) for w in caught)
    assert (damaged.read_bytes() if not damaged.is_symlink() else ("link", str(damaged.readlink()))) == before
    assert {item.key for item in store.search(("user", "alice", "memories"))} == {"coffee", "editor_theme"}


def test_a_record_of_an_unknown_message_type_is_quarantined_and_the_session_loads(tmp_path: Path) -> None:
    manager = SessionManager(tmp_path / "store")
    session = manager.get_or_create("k")
    session.append_message(HumanMessage(content="one", id="m1"))
    session.append_message(AIMessage(content="two", id="m2"))
    manager.save(session)
    log = tmp_path / "store" / "default" / "k.jsonl"
    with log.open("a") as handle:
        handle.write(json.dumps({"id": "m3", "message": {"type": "hologram", "data": {"content": "?"}}, "seq": 2}) + "\n")
    with pytest.warns(RuntimeWarning, match="corrupt line"):
        loaded = SessionManager(tmp_path / "store").get("k")
    assert [m.id for m in loaded.full_chat_history] == ["m1", "m2"]
    assert "hologram" in (tmp_path / "store" / "default" / "k.quarantine.jsonl").read_text()


def _ov_line(text: str) -> str:
    return json.dumps({"id": "m1", "role": "user", "parts": [{"type": "text", "text": text}], "created_at": "2026-01-01T00:00:00Z"})


@pytest.mark.parametrize("kind", ["bad UTF-8", "deep nesting", "deep nesting in a part"])
def test_openviking_imports_name_the_bad_file(tmp_path: Path, kind: str) -> None:
    folder = tmp_path / "ov" / "chat1"
    folder.mkdir(parents=True)
    live = folder / "messages.jsonl"
    if kind == "bad UTF-8":
        live.write_bytes(_ov_line("ok").encode() + b"\n" + b'{"id": "m2", "role": "user", "parts": [], "x": "\xff"}\n')
    elif kind == "deep nesting":
        live.write_text("[" * DEEP + "]" * DEEP + "\n")
    else:
        live.write_text(_ov_line("ok")[:-1] + ', "extra": ' + "[" * 5000 + "]" * 5000 + "}\n")
    manager = SessionManager(tmp_path / "store")
    with pytest.raises((StoreError, DocumentError), match=r"messages\.jsonl"):
        manager.import_openviking(folder)
    assert manager.list_sessions() == []


@pytest.mark.parametrize("kind", ["bad UTF-8", "deep nesting"])
def test_nanobot_imports_name_the_bad_file(tmp_path: Path, kind: str) -> None:
    file = tmp_path / "sessions" / "cli_direct.jsonl"
    file.parent.mkdir()
    header = json.dumps({"_type": "metadata", "key": "cli:direct"}) + "\n"
    if kind == "bad UTF-8":
        file.write_bytes(header.encode() + b'{"role": "user", "content": "\xff\xfe"}\n')
    else:
        file.write_text(header + '{"role": "user", "content": ' + "[" * DEEP + "]" * DEEP + "}\n")
    manager = SessionManager(tmp_path / "store")
    with pytest.raises((StoreError, DocumentError), match=r"cli_direct\.jsonl"):
        manager.import_nanobot(file)
    assert manager.list_sessions() == []
