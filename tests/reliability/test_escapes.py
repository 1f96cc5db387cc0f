"""Nothing a session holds or a folder contains makes the library write or read outside its root.

Classes (each case asserts that nothing outside the root changed):
- traversal ids and names: tool-call ids, archive names and the nanobot file name kept in
  metadata: relative, absolute, ``..`` in every position, backslashes, NUL, very long;
- symbolic links at every path an importer, an exporter or a store opens;
- export over a source the other system changed since it was imported or exported.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
import pytest

from session_graph import DocumentError, MessageError, Session, SessionManager, StoreError
from session_graph.memory import FileMemoryStore


def tree(root: Path, skip: Path | None = None) -> dict[str, Any]:
    """Every path under ``root`` (outside ``skip``) with its bytes or link target."""
    out: dict[str, Any] = {}
    for folder, dirs, files in os.walk(root):
        for name in dirs + files:
            path = Path(folder) / name
            if skip is not None and (path == skip or skip in path.parents or path in skip.parents):
                continue  # the root, what is in it, and the folders made to hold it
            if path.is_symlink():
                out[str(path)] = ("link", os.readlink(path))
            elif path.is_file():
                out[str(path)] = path.read_bytes()
            else:
                out[str(path)] = "dir"
    return out


def hostile_ids(tmp_path: Path) -> list[str]:
    absolute = str(tmp_path / "abs" / "escaped")
    return [
        "../../../../escaped", "../escaped", "..", ".", "a/..", "a/../../../../escaped", "a/b/../../../../../escaped",
        "./../../escaped", "escaped/../../../../x", absolute, "/tmp/../" + absolute.lstrip("/"), "..\\..\\..\\escaped",
        "a\\..\\..\\..\\escaped", "nul\x00byte", "../../nul\x00", "x" * 5000, "../" * 60 + "escaped", "~/escaped",
        ".hidden", "a/./b/../../..",
    ]


@pytest.fixture
def bait(tmp_path: Path) -> Path:
    """A file outside every root, which an escape would replace."""
    (tmp_path / "abs").mkdir()
    target = tmp_path / "outside.txt"
    target.write_text("precious")
    return target


def with_tool_call(manager: SessionManager, key: str, tool_id: str) -> Session | None:
    session = manager.get_or_create(key)
    session.append_message(HumanMessage(content="hi"))
    try:
        session.append_message(AIMessage(content="", tool_calls=[{"id": tool_id, "name": "grep", "args": {}}]))
        session.append_message(ToolMessage(content="out", tool_call_id=tool_id))
    except MessageError:
        return None  # refused at the door: nothing to escape with
    manager.save(session)
    return session


@pytest.mark.parametrize("index", range(20))
def test_a_hostile_tool_call_id_never_escapes_an_openviking_export(tmp_path: Path, bait: Path, index: int) -> None:
    tool_id = hostile_ids(tmp_path)[index]
    manager = SessionManager(tmp_path / "store")
    if with_tool_call(manager, "chat1", tool_id) is None:
        return
    root = tmp_path / "exp" / "a" / "b"
    before = tree(tmp_path, skip=root)
    folder = Path(manager.export("chat1", "openviking", root))
    assert tree(tmp_path, skip=root) == before
    (written,) = list((folder / "tools").iterdir())
    assert written.parent == folder / "tools"  # one folder, right there
    assert json.loads((written / "tool.json").read_text())["tool_id"] == tool_id  # the id itself is kept


@pytest.mark.parametrize("index", range(20))
def test_a_hostile_archive_name_in_a_document_is_refused(tmp_path: Path, bait: Path, index: int) -> None:
    name = hostile_ids(tmp_path)[index]
    session = Session("chat1")
    session.append_message(HumanMessage(content="hi"))
    document = session.to_dict()
    document["archived_through"] = 1
    document["archives"] = {"next": 2, "done": {name: {"start": 0, "end": 1, "abstract": "", "overview": ""}}}
    with pytest.raises(DocumentError):
        Session("x").load_dict(document)


@pytest.mark.parametrize("index", range(20))
def test_a_hostile_archive_name_in_stored_state_never_escapes_an_export(tmp_path: Path, bait: Path, index: int) -> None:
    """A ledger edited in memory (or by a store bypassing the loader) is checked again on export."""
    name = hostile_ids(tmp_path)[index]
    manager = SessionManager(tmp_path / "store")
    session = manager.get_or_create("chat1")
    session.append_message(HumanMessage(content="hi"))
    manager.save(session)
    session.state.archived_through = 1
    session.state.archives = {"next": 2, "done": {name: {"start": 0, "end": 1, "abstract": "x", "overview": "y"}}}
    root = tmp_path / "exp"
    before = tree(tmp_path, skip=root)
    from session_graph.interop.openviking import write_openviking_session

    with pytest.raises(DocumentError):
        write_openviking_session(session.state, root)
    assert tree(tmp_path, skip=root) == before
    assert not root.exists() or not any(root.rglob("*.jsonl"))  # checked before the first write


@pytest.mark.parametrize("index", range(20))
def test_a_hostile_nanobot_file_name_in_metadata_never_escapes(tmp_path: Path, bait: Path, index: int) -> None:
    name = hostile_ids(tmp_path)[index] + ".jsonl"
    manager = SessionManager(tmp_path / "store")
    session = manager.get_or_create("chat1")
    session.append_message(HumanMessage(content="hi"))
    session.metadata["nanobot"] = {"version": "0.3", "file": name, "header": {"_type": "metadata", "key": "chat1"},
                                   "records": [], "count": 1}
    manager.save(session.touch())
    root = tmp_path / "exp"
    before = tree(tmp_path, skip=root)
    try:
        written = Path(manager.export("chat1", "nanobot", root))
    except (DocumentError, StoreError):
        written = None  # refused, naming the culprit
    assert tree(tmp_path, skip=root) == before
    assert written is None or written.parent == root  # or a plain name such as '...jsonl', right there


def test_the_issue_reproduction_writes_inside_the_export_folder(tmp_path: Path) -> None:
    manager = SessionManager(tmp_path / "store")
    s = manager.get_or_create("chat1")
    s.append_message({"role": "user", "content": "hi"})
    s.append_message({"role": "assistant", "content": "", "tool_calls": [{"id": "../../../../escaped", "name": "grep", "args": {}}]})
    s.append_message({"role": "tool", "tool_call_id": "../../../../escaped", "content": "out"})
    manager.save(s)
    manager.export("chat1", "openviking", tmp_path / "exp" / "a" / "b")
    assert not (tmp_path / "exp" / "escaped").exists() and not (tmp_path / "escaped").exists()
    assert [p.name for p in (tmp_path / "exp" / "a" / "b" / "chat1" / "tools").iterdir()] != []


# -- symbolic links ---------------------------------------------------------------------------------
def openviking_session(folder: Path) -> None:
    line = {"id": "m1", "role": "user", "parts": [{"type": "text", "text": "hello"}], "created_at": "2026-01-01T00:00:00Z"}
    (folder / "history" / "archive_001").mkdir(parents=True)
    (folder / "history" / "archive_001" / "messages.jsonl").write_text(json.dumps(line) + "\n")
    (folder / "history" / "archive_001" / ".abstract.md").write_text("abstract")
    (folder / "history" / "archive_001" / ".overview.md").write_text("overview")
    (folder / "messages.jsonl").write_text(json.dumps({**line, "id": "m2"}) + "\n")


def secret_outside(tmp_path: Path) -> Path:
    secret = tmp_path / "secret"
    openviking_session(secret)  # a valid session: following the link would import it
    return secret


def _link(link: Path, target: Path) -> None:
    if link.is_dir() and not link.is_symlink():
        import shutil

        shutil.rmtree(link)
    elif link.exists() or link.is_symlink():
        link.unlink()
    link.symlink_to(target)


OPENVIKING_LINKS = {
    "messages.jsonl": lambda s, secret: _link(s / "messages.jsonl", secret / "messages.jsonl"),
    "history": lambda s, secret: _link(s / "history", secret / "history"),
    "history/archive_001": lambda s, secret: _link(s / "history" / "archive_001", secret / "history" / "archive_001"),
    "archive messages.jsonl": lambda s, secret: _link(s / "history" / "archive_001" / "messages.jsonl",
                                                      secret / "history" / "archive_001" / "messages.jsonl"),
    ".abstract.md": lambda s, secret: _link(s / "history" / "archive_001" / ".abstract.md",
                                            secret / "history" / "archive_001" / ".abstract.md"),
    ".overview.md": lambda s, secret: _link(s / "history" / "archive_001" / ".overview.md",
                                            secret / "history" / "archive_001" / ".overview.md"),
}


@pytest.mark.parametrize("where", list(OPENVIKING_LINKS))
def test_the_openviking_importer_never_follows_a_link(tmp_path: Path, where: str) -> None:
    secret = secret_outside(tmp_path)
    source = tmp_path / "import" / "chat1"
    openviking_session(source)
    OPENVIKING_LINKS[where](source, secret)
    manager = SessionManager(tmp_path / "store")
    before = tree(tmp_path, skip=tmp_path / "store")
    with pytest.raises(StoreError, match="symbolic link"):
        manager.import_openviking(source)
    assert manager.list_sessions() == [] and tree(tmp_path, skip=tmp_path / "store") == before


def test_a_linked_session_folder_in_an_openviking_parent_is_refused(tmp_path: Path) -> None:
    secret = secret_outside(tmp_path)
    parent = tmp_path / "import"
    openviking_session(parent / "chat1")
    (parent / "chat2").symlink_to(secret)
    manager = SessionManager(tmp_path / "store")
    with pytest.raises(StoreError, match="symbolic link"):
        manager.import_openviking(parent)
    assert manager.list_sessions() == []


def nanobot_file(path: Path, key: str = "cli:direct", text: str = "hello") -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = [{"_type": "metadata", "key": key, "created_at": "2026-01-01T00:00:00", "updated_at": "2026-01-01T00:00:00",
              "metadata": {}, "last_consolidated": 0},
             {"role": "user", "content": text, "timestamp": "2026-01-01T00:00:01"}]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))


@pytest.mark.parametrize("where", ["file in folder", "workspace folder", "file given"])
def test_the_nanobot_importer_never_follows_a_link(tmp_path: Path, where: str) -> None:
    secret = tmp_path / "secret" / "ws"
    nanobot_file(secret / "Y2xpOmRpcmVjdA.jsonl")
    sessions = tmp_path / "sessions"
    sessions.mkdir()
    if where == "file in folder":
        nanobot_file(sessions / "a.jsonl", key="a")
        (sessions / "b.jsonl").symlink_to(secret / "Y2xpOmRpcmVjdA.jsonl")
        path = sessions
    elif where == "workspace folder":
        (sessions / "ws").symlink_to(secret)
        path = sessions
    else:
        (sessions / "c.jsonl").symlink_to(secret / "Y2xpOmRpcmVjdA.jsonl")
        path = sessions / "c.jsonl"
    manager = SessionManager(tmp_path / "store")
    with pytest.raises(StoreError, match="symbolic link"):
        manager.import_nanobot(path)
    assert manager.list_sessions() == []


@pytest.mark.parametrize("fmt", ["openviking", "nanobot"])
@pytest.mark.parametrize("where", ["target file", "target folder"])
def test_an_export_never_writes_through_a_link(tmp_path: Path, bait: Path, fmt: str, where: str) -> None:
    manager = SessionManager(tmp_path / "store")
    session = manager.get_or_create("chat1")
    session.append_message(HumanMessage(content="hi"))
    manager.save(session)
    root = tmp_path / "exp"
    root.mkdir()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    name = "chat1/messages.jsonl" if fmt == "openviking" else "Y2hhdDE.jsonl"
    if where == "target file":
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).symlink_to(bait)
    elif fmt == "openviking":
        (root / "chat1").symlink_to(elsewhere)
    else:
        root.rmdir()
        root.symlink_to(elsewhere)  # the export folder itself is the caller's choice: allowed
        manager.export("chat1", fmt, root)
        assert (elsewhere / name).is_file() and bait.read_text() == "precious"
        return
    before = tree(tmp_path, skip=root)
    with pytest.raises(StoreError, match="symbolic link"):
        manager.export("chat1", fmt, root)
    assert tree(tmp_path, skip=root) == before and bait.read_text() == "precious" and list(elsewhere.iterdir()) == []


@pytest.mark.parametrize("which", ["log", "meta", "lock", "tenant folder"])
def test_the_jsonl_store_never_reads_or_rewrites_through_a_link(tmp_path: Path, bait: Path, which: str) -> None:
    store = tmp_path / "store"
    manager = SessionManager(store)
    session = manager.get_or_create("k")
    session.append_message(HumanMessage(content="hi"))
    manager.save(session)
    tenant = store / "default"
    if which == "tenant folder":
        moved = tmp_path / "moved"
        tenant.rename(moved)
        tenant.symlink_to(moved)
    else:
        name = {"log": "k.jsonl", "meta": "k.meta.json", "lock": "k.lock"}[which]
        (tenant / name).unlink(missing_ok=True)
        (tenant / name).symlink_to(bait)
    before = tree(tmp_path, skip=store)
    with pytest.raises(StoreError, match="symbolic link"):
        fresh = SessionManager(store)
        again = fresh.get_or_create("k")
        again.append_message(HumanMessage(content="more"))
        fresh.save(again)
    assert tree(tmp_path, skip=store) == before and bait.read_text() == "precious"


def test_the_file_memory_store_never_serves_or_writes_through_a_link(tmp_path: Path, bait: Path) -> None:
    root = tmp_path / "memory"
    store = FileMemoryStore(root, fsync=False)
    namespace = ("user", "alice", "memories", "preferences")
    store.put(namespace, "real", {"content": "tea", "status": "active"})
    bait.write_text('---\n{"namespace": ["user", "alice", "memories", "preferences"], "key": "linked", "value": {}}\n---\nSECRET')
    (store.path_of(namespace, "real").parent / "linked.md").symlink_to(bait)
    before = tree(tmp_path, skip=root)
    with pytest.warns(RuntimeWarning, match="symbolic link"):
        assert store.get(namespace, "linked") is None
    assert [item.key for item in store.search(namespace)] == ["real"]
    assert "SECRET" not in json.dumps([i.value for i in store.search(("user",))])
    store.put(namespace, "linked", {"content": "new", "status": "active"})  # the link is moved aside, never followed
    assert store.get(namespace, "linked").value["content"] == "new"
    assert tree(tmp_path, skip=root) == before
    # a linked namespace folder: a write refuses, a read skips it
    (root / "user" / "bob").symlink_to(tmp_path / "abs")
    with pytest.raises(StoreError, match="symbolic link"):
        store.put(("user", "bob", "memories", "preferences"), "x", {"content": "y", "status": "active"})
    assert list((tmp_path / "abs").iterdir()) == []


# -- export over a changed source ---------------------------------------------------------------------
def test_an_openviking_export_never_overwrites_what_openviking_appended(tmp_path: Path) -> None:
    source = tmp_path / "ov"
    openviking_session(source / "chat1")
    manager = SessionManager(tmp_path / "store")
    manager.import_openviking(source / "chat1")
    manager.export("chat1", "openviking", source)  # nothing changed: an export of what was imported is fine
    live = source / "chat1" / "messages.jsonl"
    extra = {"id": "m3", "role": "user", "parts": [{"type": "text", "text": "added by openviking"}], "created_at": "2026-01-02T00:00:00Z"}
    with live.open("a") as handle:
        handle.write(json.dumps(extra) + "\n")
    before = tree(tmp_path, skip=tmp_path / "store")
    with pytest.raises(StoreError, match="changed since"):
        manager.export("chat1", "openviking", source)
    assert tree(tmp_path, skip=tmp_path / "store") == before
    manager.import_openviking(source / "chat1", on_existing="replace")  # the documented way on: import again
    session = manager.get("chat1")
    session.append_message(HumanMessage(content="and one from session_graph"))
    manager.save(session)
    manager.export("chat1", "openviking", source)
    text = live.read_text()
    assert "added by openviking" in text and "and one from session_graph" in text


def test_a_nanobot_export_never_overwrites_what_nanobot_appended(tmp_path: Path) -> None:
    folder = tmp_path / "sessions"
    nanobot_file(folder / "cli_direct.jsonl")
    manager = SessionManager(tmp_path / "store")
    (key,) = manager.import_nanobot(folder)
    manager.export(key, "nanobot", folder)  # unchanged: fine
    with (folder / "cli_direct.jsonl").open("a") as handle:
        handle.write(json.dumps({"role": "user", "content": "added by nanobot", "timestamp": "2026-01-02T00:00:00"}) + "\n")
    before = tree(tmp_path, skip=tmp_path / "store")
    with pytest.raises(StoreError, match="changed since"):
        manager.export(key, "nanobot", folder)
    assert tree(tmp_path, skip=tmp_path / "store") == before
    session = manager.get(key)  # our own additions do not count as a change of theirs
    manager.import_nanobot(folder, on_existing="replace")
    session = manager.get(key)
    session.append_message(HumanMessage(content="from session_graph"))
    manager.save(session)
    manager.export(key, "nanobot", folder)
    manager.export(key, "nanobot", folder)  # a re-export of what we wrote
    text = (folder / "cli_direct.jsonl").read_text()
    assert "added by nanobot" in text and "from session_graph" in text


def test_an_export_never_overwrites_another_sessions_file(tmp_path: Path) -> None:
    manager = SessionManager(tmp_path / "store")
    session = manager.get_or_create("chat1")
    session.append_message(HumanMessage(content="mine"))
    manager.save(session)
    root = tmp_path / "exp"
    nanobot_file(root / "Y2hhdDE.jsonl", key="chat1", text="someone else's")
    before = tree(tmp_path, skip=tmp_path / "store")
    with pytest.raises(StoreError, match="changed since"):
        manager.export("chat1", "nanobot", root)
    assert tree(tmp_path, skip=tmp_path / "store") == before


def test_a_re_export_after_a_commit_moved_messages_into_an_archive_is_allowed(tmp_path: Path) -> None:
    """Our own commit moves live lines into history/archive_001: nothing is lost, so no refusal."""
    from langchain_core.language_models.fake_chat_models import FakeListChatModel
    from langgraph.store.memory import InMemoryStore

    from session_graph.memory import MemoryConfig

    manager = SessionManager(tmp_path / "store", memory=MemoryConfig(store=InMemoryStore(), user="a", agent="b"))
    session = manager.get_or_create("c")
    session.append_message(HumanMessage(content="hi"))
    session.append_message(AIMessage(content="hello"))
    manager.save(session)
    manager.export("c", "openviking", tmp_path / "exp")
    session.handlers.model = FakeListChatModel(responses=["# Session Summary\n**Overview**: hi | done", json.dumps({"memories": []})])
    assert manager.commit(session)["status"] == "committed"
    folder = Path(manager.export("c", "openviking", tmp_path / "exp"))
    assert "hello" in (folder / "history" / "archive_001" / "messages.jsonl").read_text()
    assert (folder / "messages.jsonl").read_text() == ""


def test_a_nanobot_re_export_after_our_own_metadata_changed_is_allowed(tmp_path: Path) -> None:
    manager = SessionManager(tmp_path / "store")
    session = manager.get_or_create("chat1")
    session.append_message(HumanMessage(content="hi"))
    manager.save(session)
    manager.export("chat1", "nanobot", tmp_path / "exp")
    session.metadata["topic"] = "travel"
    session.append_message(AIMessage(content="hello"))
    manager.save(session.touch())
    path = Path(manager.export("chat1", "nanobot", tmp_path / "exp"))
    assert "travel" in path.read_text() and "hello" in path.read_text()
