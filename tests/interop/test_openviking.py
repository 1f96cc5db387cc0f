"""OpenViking's session layout: imported (archives and live messages), exported byte-identical,
and committed onwards without overwriting an archive."""

from __future__ import annotations

from pathlib import Path

import pytest

from session_graph import SessionManager, StoreError
from session_graph.errors import DocumentError
from session_graph.memory import MemoryConfig
from session_graph.memory.filestore import FileMemoryStore

GOLDEN = (Path(__file__).parents[1] / "snapshots" / "openviking_lines.jsonl").read_text(encoding="utf-8").splitlines()


def openviking_session(root: Path, name: str = "chat_001") -> Path:
    folder = root / name
    archive = folder / "history" / "archive_001"
    archive.mkdir(parents=True)
    (archive / "messages.jsonl").write_text("".join(f"{line}\n" for line in GOLDEN[:2]), encoding="utf-8")
    (archive / ".abstract.md").write_text("Embedding search, explained", encoding="utf-8")
    (archive / ".overview.md").write_text("# Session Summary\n**Overview**: Embedding search, explained", encoding="utf-8")
    (folder / "messages.jsonl").write_text("".join(f"{line}\n" for line in GOLDEN[2:]), encoding="utf-8")
    return folder


@pytest.mark.parametrize("store", ["jsonl", "sqlite"])
def test_import_then_export_is_byte_identical(store: str, tmp_path: Path) -> None:
    source = openviking_session(tmp_path / "ov")
    manager = SessionManager(tmp_path / ("s" if store == "jsonl" else "s.db"))
    assert manager.import_openviking(tmp_path / "ov") == ["chat_001"]
    session = SessionManager(manager.store).get_or_create("chat_001")
    assert session.state.archives["done"]["archive_001"]["abstract"] == "Embedding search, explained"
    assert 0 < session.state.archived_through < len(session.full_chat_history)
    out = Path(manager.export("chat_001", "openviking", tmp_path / "out"))
    for relative in ("messages.jsonl", "history/archive_001/messages.jsonl", "history/archive_001/.abstract.md",
                     "history/archive_001/.overview.md"):
        assert (out / relative).read_bytes() == (source / relative).read_bytes(), relative
    tools = sorted(p.relative_to(out).as_posix() for p in (out / "tools").rglob("tool.json"))
    assert tools == ["tools/c9/tool.json", "tools/call_1/tool.json"]  # every finished tool of the golden lines


def test_the_next_commit_continues_the_numbering(tmp_path: Path) -> None:
    openviking_session(tmp_path / "ov")
    memory = MemoryConfig(store=FileMemoryStore(tmp_path / "memory", fsync=False), user="alice", agent="coder")
    manager = SessionManager(tmp_path / "s", memory=memory)
    manager.import_openviking(tmp_path / "ov")
    session = manager.get_or_create("chat_001")
    result = manager.commit(session)
    assert result["archive"] == "archive_002" and result["status"] == "committed"
    done = session.state.archives["done"]
    assert done["archive_001"]["end"] == done["archive_002"]["start"] and done["archive_002"]["end"] == len(session.full_chat_history)
    out = Path(manager.export("chat_001", "openviking", tmp_path / "out"))
    assert (out / "messages.jsonl").read_text() == "" and (out / "history" / "archive_002" / "messages.jsonl").read_text()


def test_re_import_and_bad_input(tmp_path: Path) -> None:
    openviking_session(tmp_path / "ov")
    manager = SessionManager(tmp_path / "s")
    manager.import_openviking(tmp_path / "ov")
    with pytest.raises(StoreError, match="on_existing='skip' or 'replace'"):
        manager.import_openviking(tmp_path / "ov")
    assert manager.import_openviking(tmp_path / "ov", on_existing="skip") == []
    assert manager.import_openviking(tmp_path / "ov", on_existing="replace") == ["chat_001"]
    (tmp_path / "empty").mkdir()
    with pytest.raises(DocumentError, match="holds no OpenViking session"):
        manager.import_openviking(tmp_path / "empty")
    broken = openviking_session(tmp_path / "bad", "chat_002")
    (broken / "messages.jsonl").write_text(GOLDEN[2] + "\n{not json\n", encoding="utf-8")
    with pytest.raises(DocumentError, match=r"messages.jsonl:2 is not JSON"):
        SessionManager(tmp_path / "s2").import_openviking(broken)
    assert SessionManager(tmp_path / "s2").list_sessions() == []  # nothing half-imported
    with pytest.raises(Exception, match="needs the directory"):
        manager.export("chat_001", "openviking")
