"""nanobot interop against files the real nanobot wrote (tests/data/nanobot/<version>/, made by
tests/data/nanobot/generate.py with nanobot-ai 0.1.3.post7, 0.2.2 and 0.3.5): keys, every
field, byte-identical re-export, get_history as each version returns it, archived prefixes
folded into the summary, re-imports. The last test loads our exports with the real packages
when the package registry is reachable."""

from __future__ import annotations

import gzip
import json
import os
from pathlib import Path
import subprocess
import sys
import warnings

from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
import pytest

from session_graph import SessionManager, StoreError
from session_graph.cli import main
from session_graph.errors import DocumentError
from session_graph.interop.nanobot import nanobot_record
from session_graph.stores.nanobot import NanobotKeyWarning, nanobot_files, read_nanobot_session

DATA = Path(__file__).parents[1] / "data" / "nanobot"
VERSIONS = ["0.1.3.post7", "0.2.2", "0.3.5"]
KEYS = ["cli:direct", "discord:guild:chan_1", "nocolon_key", "plain", "slack:U_1:T_2", "telegram:42"]
FILE_KEYS = {f"{key.replace(':', '_')}.jsonl": key for key in KEYS}  # what a 0.1.x user knows: file -> key


def key_for(file: Path) -> str | None:
    return FILE_KEYS.get(file.name)


def golden_history(version: str) -> dict[str, dict[str, list[dict]]]:
    return json.loads(gzip.decompress((DATA / version / "history.json.gz").read_bytes()))


def raw_records(file: Path) -> list[dict]:
    lines = [json.loads(line) for line in file.read_text(encoding="utf-8").splitlines() if line.strip()]
    return [line for line in lines if "_type" not in line]


def imported(tmp_path: Path, version: str, store: str = "jsonl") -> SessionManager:
    target = tmp_path / ("store.db" if store == "sqlite" else "store")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # key_for answers every 0.1.x name: no warning
        assert sorted(SessionManager(target).import_nanobot(DATA / version / "sessions", key_for=key_for)) == KEYS
    return SessionManager(target)  # a fresh manager: everything below comes from the store


@pytest.mark.parametrize("version", VERSIONS)
def test_every_field_of_every_message_survives_the_store(version: str, tmp_path: Path) -> None:
    manager = imported(tmp_path, version, "sqlite" if version == "0.2.2" else "jsonl")
    compared = fields = 0
    for file in nanobot_files(DATA / version / "sessions"):
        key = read_nanobot_session(file, key_for).key
        session = manager.get_or_create(key)
        records = raw_records(file)
        assert len(session.full_chat_history) == len(records)
        for message, record in zip(session.full_chat_history, records, strict=True):
            assert nanobot_record(message, "") == record
            compared, fields = compared + 1, fields + len(record)
        by_type = {type(m) for m in session.full_chat_history}
        assert {HumanMessage, AIMessage, ToolMessage} <= by_type
        calls = [m for m in session.full_chat_history if isinstance(m, AIMessage) and m.tool_calls]
        assert calls and all(c.tool_calls[0]["name"] == "exec" and "command" in c.tool_calls[0]["args"] for c in calls)
        reasoning = [m.additional_kwargs["reasoning_content"] for m in calls]
        assert all(text.startswith("The user wants test") for text in reasoning)  # where langchain providers read it
    assert compared > 100 and fields > 500


@pytest.mark.parametrize("version", VERSIONS)
def test_export_writes_each_file_back_byte_identical(version: str, tmp_path: Path) -> None:
    manager = imported(tmp_path, version)
    originals = {file.name: file for file in nanobot_files(DATA / version / "sessions")}
    for key in KEYS:
        written = Path(manager.export(key, "nanobot", tmp_path / "out"))
        assert written.read_bytes() == originals[written.name].read_bytes(), f"{version} {key}"
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == sorted(originals)


@pytest.mark.parametrize("version", VERSIONS)
def test_get_history_compat_matches_what_that_nanobot_version_returned(version: str, tmp_path: Path) -> None:
    manager = imported(tmp_path, version)
    golden = golden_history(version)
    comparisons = mismatches = 0
    for key in KEYS:
        session = manager.get_or_create(key)
        for count, expected in golden[key].items():
            comparisons += 1
            mismatches += session.get_history(int(count), compat="nanobot") != expected
    assert comparisons == sum(len(v) for v in golden.values()) and comparisons > 120
    assert mismatches == 0


def test_get_history_default_opens_on_a_user_turn_and_keeps_reasoning(tmp_path: Path) -> None:
    session = imported(tmp_path, "0.3.5").get_or_create("plain")
    for count in range(1, len(session.current_chat_history) + 2):
        history = session.get_history(count)
        if any(entry["role"] == "user" for entry in history):
            assert history[0]["role"] == "user", count
        called = {c["id"] for entry in history for c in entry.get("tool_calls") or []}
        assert all(entry["tool_call_id"] in called for entry in history if entry["role"] == "tool")
    with_reasoning = [e for e in session.get_history(100) if e.get("reasoning_content")]
    assert with_reasoning and all(e["role"] == "assistant" for e in with_reasoning)


def test_keys_of_01_files_are_never_guessed_silently(tmp_path: Path) -> None:
    folder = DATA / "0.1.3.post7" / "sessions"
    with pytest.warns(NanobotKeyWarning) as caught:
        keys = SessionManager(tmp_path / "a").import_nanobot(folder)
    ambiguous = sorted(name for name in FILE_KEYS if "_" in Path(name).stem)
    assert len(caught) == len(ambiguous) == 5  # "plain.jsonl" names its key unambiguously
    assert all("key_for" in str(w.message) for w in caught)
    assert "plain" in keys and "discord:guild:chan_1" not in keys  # the name alone cannot tell
    # a key stored in the file (0.2.x and later) is used as is, whatever the file is called
    assert sorted(SessionManager(tmp_path / "b").import_nanobot(DATA / "0.2.2" / "sessions")) == KEYS
    with pytest.raises(DocumentError, match="key_for"):
        SessionManager(tmp_path / "c").import_nanobot(folder, key_for=lambda file: "")


def test_archived_prefix_becomes_the_summary_above_the_window(tmp_path: Path) -> None:
    manager = imported(tmp_path, "0.3.5")
    session = manager.get_or_create("telegram:42")
    header = json.loads((next(f for f in nanobot_files(DATA / "0.3.5" / "sessions") if read_nanobot_session(f).key == "telegram:42"))
                        .read_text(encoding="utf-8").splitlines()[0])
    archived = header["last_archived"]
    assert archived == 4 and session.memo["summary"] == header["metadata"]["_last_summary"]["text"]
    assert session.current_chat_history == session.full_chat_history[archived:]  # not replayed raw, not lost
    assert session.current_chat_history[0].content.startswith("Continue the active task")
    session.set_settings("session.mode", "summary")
    view = session.view()
    summary_at = next(i for i, m in enumerate(view.messages) if "Working memory 0" in str(m.content))
    marker_at = next(i for i, m in enumerate(view.messages) if str(m.content).startswith("Continue the active task"))
    assert summary_at < marker_at  # the checkpoint the marker refers to is above it
    # 0.2.x: last_consolidated works the same way
    older = imported(tmp_path / "older", "0.2.2").get_or_create("slack:U_1:T_2")
    assert older.current_chat_history == older.full_chat_history[4:] and older.memo["summary"] == "Consolidated 2"


def test_reimport_skips_or_replaces_and_error_imports_nothing(tmp_path: Path) -> None:
    manager = imported(tmp_path, "0.3.5")
    session = manager.get_or_create("plain")
    session.append_message({"role": "user", "content": "one more"})
    manager.save(session)
    before = len(manager.get_or_create("plain").full_chat_history)
    with pytest.raises(StoreError, match="--skip-existing"):
        manager.import_nanobot(DATA / "0.2.2" / "sessions")
    assert manager.import_nanobot(DATA / "0.3.5" / "sessions", on_existing="skip") == []
    assert len(SessionManager(tmp_path / "store").get_or_create("plain").full_chat_history) == before
    seen: list[tuple[int, int | None]] = []
    keys = manager.import_nanobot(DATA / "0.3.5" / "sessions", on_existing="replace", progress=lambda d, t: seen.append((d, t)))
    assert sorted(keys) == KEYS and seen[0] == (0, 6) and seen[-1] == (6, 6)
    assert len(SessionManager(tmp_path / "store").get_or_create("plain").full_chat_history) == before - 1


def test_added_messages_are_exported_in_nanobot_shape(tmp_path: Path) -> None:
    manager = imported(tmp_path, "0.3.5")
    session = manager.get_or_create("plain")
    session.append_message({"role": "user", "content": "and now?"})
    session.append_message(AIMessage("Done.", additional_kwargs={"reasoning_content": "short"}))
    manager.save(session)
    written = Path(manager.export("plain", "nanobot", tmp_path / "out"))
    lines = [json.loads(line) for line in written.read_text(encoding="utf-8").splitlines()]
    original = (DATA / "0.3.5" / "sessions").rglob(written.name).__next__().read_text(encoding="utf-8").splitlines()
    assert [json.dumps(line, ensure_ascii=False) for line in lines[1:len(original)]] == original[1:]
    assert lines[-2]["role"] == "user" and lines[-2]["content"] == "and now?" and lines[-2]["timestamp"]
    assert lines[-1] == {"role": "assistant", "content": "Done.", "timestamp": lines[-1]["timestamp"], "reasoning_content": "short"}
    assert lines[0]["updated_at"] != json.loads(original[0])["updated_at"]
    # a session that never was nanobot's: 0.3.x's layout, read back by our importer unchanged
    fresh = manager.get_or_create("web:7")
    fresh.append_message({"role": "user", "content": "hi"})
    fresh.append_message({"role": "assistant", "content": "", "tool_calls": [{"id": "c1", "name": "ls", "args": {"p": "."}}]})
    fresh.append_message({"role": "tool", "content": "a.txt", "tool_call_id": "c1"})
    manager.save(fresh)
    path = Path(manager.export("web:7", "nanobot", tmp_path / "fresh"))
    assert path.name == "d2ViOjc.jsonl" and read_nanobot_session(path).key == "web:7"
    again = SessionManager(tmp_path / "again")
    again.import_nanobot(path)
    restored = again.get_or_create("web:7").full_chat_history
    assert [(type(m), m.content) for m in restored] == [(type(m), m.content) for m in fresh.full_chat_history]
    assert restored[1].tool_calls[0]["args"] == {"p": "."}


def test_bad_folders_and_lines_are_named(tmp_path: Path) -> None:
    (tmp_path / "empty" / "inner").mkdir(parents=True)
    with pytest.raises(DocumentError, match="no nanobot session file"):
        SessionManager(tmp_path / "s").import_nanobot(tmp_path / "empty")
    bad = tmp_path / "bad" / "x.jsonl"
    bad.parent.mkdir()
    bad.write_text('{"_type": "metadata", "key": "x"}\n{"role": "user", "content": "hi"}\n{oops\n', encoding="utf-8")
    with pytest.raises(DocumentError, match=r"x\.jsonl:3"):
        SessionManager(tmp_path / "s").import_nanobot(bad.parent)
    assert SessionManager(tmp_path / "s").list_sessions() == []


def test_cli_import_equals_the_api_import(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    key_map = tmp_path / "keys.json"
    key_map.write_text(json.dumps(FILE_KEYS), encoding="utf-8")
    folder = str(DATA / "0.1.3.post7" / "sessions")
    assert main(["sessions", "--store", str(tmp_path / "cli"), "import-nanobot", folder, "--key-map", str(key_map)]) == 0
    out = capsys.readouterr()
    assert sorted(line.removeprefix("imported ") for line in out.out.splitlines()) == KEYS and "warning" not in out.err
    assert main(["sessions", "--store", str(tmp_path / "cli"), "import-nanobot", folder, "--key-map", str(key_map),
                 "--skip-existing"]) == 0
    assert "imported nothing" in capsys.readouterr().out
    api = SessionManager(tmp_path / "api")
    api.import_nanobot(folder, key_for=key_for)
    cli = SessionManager(tmp_path / "cli")
    for key in KEYS:  # the same messages, fields, window and summary (message ids are minted per import)
        a, b = api.get_or_create(key), cli.get_or_create(key)
        assert [m.model_dump(exclude={"id"}) for m in a.full_chat_history] == [m.model_dump(exclude={"id"}) for m in b.full_chat_history]
        assert len(a.current_chat_history) == len(b.current_chat_history) and a.memo == b.memo and a.metadata == b.metadata


def _real_nanobot(version: str, root: Path) -> Path | None:
    venv = root / f"nanobot-{version}"
    python = venv / "bin" / "python"
    steps = [[sys.executable, "-m", "venv", str(venv)],
             [str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check", f"nanobot-ai=={version}"]]
    for step in steps:
        try:
            subprocess.run(step, check=True, capture_output=True, timeout=600)
        except (subprocess.SubprocessError, OSError):
            return None
    return python


LOAD = r"""
import json, os, sys, pathlib, inspect, shutil
folder, home = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])
os.environ["HOME"] = str(home)
from nanobot.session.manager import SessionManager
kwargs = {"sessions_root": home / "root"} if "sessions_root" in inspect.signature(SessionManager).parameters else {}
manager = SessionManager(home / "workspace", **kwargs)
for file in folder.iterdir():
    shutil.copy(file, pathlib.Path(manager.sessions_dir) / file.name)
out = {}
for key in json.loads(sys.argv[3]):
    session = SessionManager(home / "workspace", **kwargs).get_or_create(key)
    out[key] = {"messages": session.messages, "metadata": session.metadata,
                "archived": getattr(session, "last_consolidated", 0), "history": session.get_history(max_messages=6)}
print(json.dumps(out, ensure_ascii=False, sort_keys=True))
"""


@pytest.mark.parametrize("version", VERSIONS)
def test_the_real_nanobot_loads_our_exports(version: str, tmp_path: Path) -> None:
    """Optional: installs nanobot-ai==version in a throwaway venv; skips when that cannot be done."""
    if os.environ.get("SESSION_GRAPH_SKIP_REAL_NANOBOT"):
        pytest.skip("SESSION_GRAPH_SKIP_REAL_NANOBOT is set")
    python = _real_nanobot(version, tmp_path)
    if python is None:
        pytest.skip(f"nanobot-ai=={version} could not be installed (no package registry?)")
    manager = imported(tmp_path, version)
    for key in KEYS:
        manager.export(key, "nanobot", tmp_path / "ours")
    nanobot_keys = [read_nanobot_session(f, key_for).key if version != "0.1.3.post7" else FILE_KEYS[f.name]
                    for f in nanobot_files(DATA / version / "sessions")]

    def load(folder: Path, home: str) -> dict:
        (tmp_path / home).mkdir()
        done = subprocess.run([str(python), "-c", LOAD, str(folder), str(tmp_path / home), json.dumps(nanobot_keys)],
                              check=True, capture_output=True, text=True, timeout=300)
        return json.loads(done.stdout)

    theirs = load(next(f for f in nanobot_files(DATA / version / "sessions")).parent, "home-original")
    ours = load(tmp_path / "ours", "home-ours")
    assert ours == theirs and all(theirs[key]["messages"] for key in nanobot_keys)


def test_odd_records_import_losslessly_and_stay_sendable(tmp_path: Path) -> None:
    """A call a model cut off (arguments not JSON), a null content, a role langchain calls
    system, a content that is not text: imported, paired, sent safely, exported as written."""
    lines = [
        {"_type": "metadata", "key": "odd:1", "created_at": "2026-03-01T10:00:00", "updated_at": "2026-03-01T10:00:09",
         "metadata": {}, "last_consolidated": 0},
        {"role": "developer", "content": "Answer in French.", "timestamp": "2026-03-01T10:00:00"},
        {"role": "user", "content": "liste les fichiers", "timestamp": "2026-03-01T10:00:01"},
        {"role": "assistant", "content": None, "timestamp": "2026-03-01T10:00:02",
         "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "exec", "arguments": "{\"cmd\": \"ls"}}]},
        {"role": "tool", "content": "error: bad arguments", "tool_call_id": "c1", "name": "exec", "timestamp": "2026-03-01T10:00:03"},
        {"role": "assistant", "content": 42, "timestamp": "2026-03-01T10:00:04", "latency_ms": None},
        {"role": "user", "content": "encore", "timestamp": "2026-03-01T10:00:05", "id": "m1"},
        {"role": "assistant", "content": "oui", "timestamp": "2026-03-01T10:00:06", "id": "m1"},  # an agent's own ids, repeated
    ]
    folder = tmp_path / "sessions"
    folder.mkdir()
    original = "".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines)
    (folder / "b2RkOjE.jsonl").write_text(original, encoding="utf-8")
    manager = SessionManager(tmp_path / "store")
    assert manager.import_nanobot(folder) == ["odd:1"]
    session = SessionManager(tmp_path / "store").get_or_create("odd:1")
    call = session.full_chat_history[2]
    assert call.tool_calls[0]["args"] == {"_unparsed_arguments": "{\"cmd\": \"ls"}  # still a call, paired with its result
    assert [m.type for m in session.view().messages] == ["system", "human", "ai", "tool", "ai", "human", "ai"]
    assert len({m.id for m in session.full_chat_history}) == 7  # our ids are our own; the record's "id" is kept as written
    assert Path(manager.export("odd:1", "nanobot", tmp_path / "out")).read_text(encoding="utf-8") == original


def test_text_separators_inside_messages_and_upgraded_03_roots(tmp_path: Path) -> None:
    """U+2028 inside a message is text, not a line break (nanobot reads by newline); a 0.3.x root
    also holding the pre-0.3 file 0.3.x copied in when it migrated imports the file 0.3.x reads."""
    header = {"_type": "metadata", "key": "tg:1", "created_at": "2026-03-01T10:00:00", "updated_at": "2026-03-01T10:00:01",
              "metadata": {}, "last_archived": 0, "last_consolidated": 0}
    records = [{"role": "user", "content": "one\u2028two\u0085three", "timestamp": "2026-03-01T10:00:00"},
               {"role": "tool", "content": "a result nanobot kept without its call id", "timestamp": "2026-03-01T10:00:01"}]
    text = "".join(json.dumps(line, ensure_ascii=False) + "\n" for line in [header, *records])
    workspace = tmp_path / "root" / "0123456789abcdef0123456789abcdef"
    workspace.mkdir(parents=True)
    (workspace / "dGc6MQ.jsonl").write_text(text, encoding="utf-8")
    (workspace / "tg_1.jsonl").write_text(text, encoding="utf-8")  # the migrated 0.2.x copy 0.3.x never reads
    manager = SessionManager(tmp_path / "store")
    assert manager.import_nanobot(tmp_path / "root") == ["tg:1"]
    session = SessionManager(tmp_path / "store").get_or_create("tg:1")
    assert session.full_chat_history[0].content == "one\u2028two\u0085three"
    assert Path(manager.export("tg:1", "nanobot", tmp_path / "out")).read_text(encoding="utf-8") == text


def test_compat_03_replays_02_write_stdin_calls_as_03_does(tmp_path: Path) -> None:
    """0.3.5 rewrites 0.2.x's write_stdin calls when it loads a session (checked against the real
    package); compat='nanobot-0.3' does the same on a copy, and the stored records stay as written."""
    header = {"_type": "metadata", "key": "tg:2", "created_at": "2026-03-01T10:00:00", "updated_at": "2026-03-01T10:00:01",
              "metadata": {}, "last_consolidated": 0}
    call = {"id": "c1", "type": "function",
            "function": {"name": "write_stdin", "arguments": "{\"session_id\": 1, \"chars\": \"ls\\n\", \"yield_time_ms\": 500}"}}
    records = [{"role": "user", "content": "run"}, {"role": "assistant", "content": "", "tool_calls": [call]},
               {"role": "tool", "content": "ok", "tool_call_id": "c1", "name": "write_stdin"}]
    text = "".join(json.dumps(line, ensure_ascii=False) + "\n" for line in [header, *records])
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "tg_2.jsonl").write_text(text, encoding="utf-8")
    manager = SessionManager(tmp_path / "store")
    manager.import_nanobot(tmp_path / "in")
    session = manager.get_or_create("tg:2")
    history = session.get_history(compat="nanobot-0.3")
    assert history[1]["tool_calls"][0]["function"] == {"name": "exec_session",
                                                       "arguments": "{\"session_id\":1,\"input\":\"ls\\n\",\"timeout_ms\":500}"}
    assert history[2]["name"] == "exec_session"
    assert session.get_history(compat="nanobot")[1]["tool_calls"] == [call]  # 0.2.x, the file's own version, as written
    assert Path(manager.export("tg:2", "nanobot", tmp_path / "out")).read_text(encoding="utf-8") == text


def test_cli_creates_nothing_when_the_path_or_key_map_is_bad(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    store = tmp_path / "store"
    assert main(["sessions", "--store", str(store), "import-nanobot", str(tmp_path / "missing")]) == 1
    bad = tmp_path / "keys.json"
    bad.write_text("[1]", encoding="utf-8")
    assert main(["sessions", "--store", str(store), "import-nanobot", str(DATA / "0.2.2" / "sessions"), "--key-map", str(bad)]) == 1
    err = capsys.readouterr().err
    assert "does not exist" in err and "--key-map" in err and not store.exists()
