"""``session-graph sessions ...`` against a JSONL directory and a SQLite file."""

from __future__ import annotations

import json
from pathlib import Path
import subprocess
import sys

from cli_util import run
from conftest import chat
import pytest

from session_graph.stores import SessionManager


@pytest.fixture(params=["jsonl", "sqlite"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    target = str(tmp_path / ("dir" if request.param == "jsonl" else "store.db"))
    manager = SessionManager(target)
    for key, turns in (("web:1", 2), ("telegram:42", 3)):
        session = chat(manager.get_or_create(key), turns)
        manager.save(session)
    manager.close()
    return target


def test_list_show_export_search_delete(store: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "sessions", "--store", store, "list")
    assert code == 0 and out.splitlines()[0].startswith("telegram:42\t6 messages")
    code, out, _ = run(capsys, "sessions", "--store", store, "list", "--json")
    assert [item["key"] for item in json.loads(out)] == ["telegram:42", "web:1"]
    code, out, _ = run(capsys, "sessions", "--store", store, "show", "web:1")
    assert code == 0 and "4 messages (assistant 2, user 2)" in out and "] user: u0" in out
    for fmt, marker in (("md", "# Session `web:1`"), ("txt", "] assistant: a1"), ("json", '"key": "web:1"')):
        code, out, _ = run(capsys, "sessions", "--store", store, "export", "web:1", "--format", fmt)
        assert code == 0 and marker in out
    code, out, _ = run(capsys, "sessions", "--store", store, "search", "A2...", "--substring")
    assert code == 0 and out.startswith("telegram:42#5\tassistant")
    code, out, _ = run(capsys, "sessions", "--store", store, "delete", "web:1")
    assert code == 0 and out.strip() == "deleted web:1"
    code, _, err = run(capsys, "sessions", "--store", store, "delete", "web:1")
    assert code == 1 and "no session 'web:1'" in err
    code, _, err = run(capsys, "sessions", "--store", store, "show", "web:1")
    assert code == 1 and "no stored session 'web:1'" in err


def test_bad_stores_and_keys_fail_with_one_clear_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a_file = tmp_path / "file"
    a_file.write_text("x")
    code, _, err = run(capsys, "sessions", "--store", str(a_file), "list")
    assert code == 1 and "is a file" in err and len(err.strip().splitlines()) == 1
    code, _, err = run(capsys, "sessions", "--store", str(tmp_path), "show", "../etc")
    assert code == 1 and "escapes the store" in err


def test_the_installed_command_runs(store: str) -> None:
    result = subprocess.run([sys.executable, "-m", "session_graph", "sessions", "--store", store, "list"],
                            capture_output=True, text=True, timeout=120, check=False)
    assert result.returncode == 0 and "telegram:42" in result.stdout
