"""The CLI's other commands and flags: -v, export formats and import, trace, draw, | head, --tenant."""

from __future__ import annotations

import json
import os
from pathlib import Path
import subprocess
import sys

from cli_util import run
from conftest import chat
import pytest

from session_graph import Session
from session_graph.cli import parser
from session_graph.stores import SessionManager

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(params=["jsonl", "sqlite"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    target = str(tmp_path / ("dir" if request.param == "jsonl" else "store.db"))
    manager = SessionManager(target)
    session = chat(manager.get_or_create("web:1").configure(limit={"chars": 60}), 4)
    if session.judge_resize():
        session.resize()
    manager.save(session)
    manager.save(chat(manager.get_or_create("telegram:42"), 3))
    acme = manager.for_tenant("acme")
    acme.save(chat(acme.get_or_create("t:1"), 1))
    manager.close()
    return target


def test_verbose_shows_the_package_log_for_every_read_command(store: str, capsys: pytest.CaptureFixture[str]) -> None:
    for argv in (["list"], ["show", "web:1"], ["export", "web:1", "--format", "txt"], ["search", "u1"], ["trace", "web:1"]):
        code, _, err = run(capsys, "sessions", "--store", store, *argv, "-v")
        lines = err.splitlines()
        assert code == 0 and any(line.startswith("session_graph.cli: INFO store ") for line in lines), (argv, err)
        assert any(f"INFO {argv[0]} took" in line for line in lines)
    code, _, err = run(capsys, "sessions", "--store", store, "show", "web:1", "-v")
    assert "session_graph.stores.session_load: INFO session 'web:1' loaded" not in err  # show reads without loading
    code, _, err = run(capsys, "sessions", "--store", store, "trace", "web:1", "-v")
    assert "session_graph.stores.session_load: INFO session 'web:1' loaded from the store" in err  # module loggers, by name
    code, _, err = run(capsys, "sessions", "--store", store, "list")
    assert err == ""  # quiet without -v (the handler is removed again)


def test_json_and_yaml_exports_load_back(store: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    original = SessionManager(store).get("web:1")
    assert original is not None and len(original.trace) == 1
    for fmt in ("json", "yaml"):
        code, text, _ = run(capsys, "sessions", "--store", store, "export", "web:1", "--format", fmt)
        assert code == 0
        loaded = Session.from_json(text) if fmt == "json" else Session.from_yaml(text)
        assert loaded.id == "web:1" and loaded.full_chat_history == original.full_chat_history
        assert [m.id for m in loaded.current_chat_history] == [m.id for m in original.current_chat_history]
        assert loaded.turns == original.turns and loaded.memo == original.memo and len(loaded.trace) == 1
        path = tmp_path / f"web.{fmt}"
        path.write_text(text, encoding="utf-8")
        code, out, _ = run(capsys, "sessions", "--store", str(tmp_path / f"new-{fmt}"), "import", str(path))
        assert code == 0 and out.strip() == "imported web:1"
        code, out, _ = run(capsys, "sessions", "--store", str(tmp_path / f"new-{fmt}"), "import", str(path), "--key", "web:2")
        assert code == 0 and out.strip() == "imported web:2"
        again = SessionManager(tmp_path / f"new-{fmt}").get("web:2")
        assert again is not None and again.full_chat_history == original.full_chat_history
        assert [m.id for m in again.current_chat_history] == [m.id for m in original.current_chat_history]
    target = str(tmp_path / "new-json")
    code, _, err = run(capsys, "sessions", "--store", target, "import", str(tmp_path / "web.json"))
    assert code == 1 and "already in the store" in err
    code, out, _ = run(capsys, "sessions", "--store", target, "import", str(tmp_path / "web.json"), "--skip-existing")
    assert code == 0 and "imported nothing" in out
    code, out, _ = run(capsys, "sessions", "--store", target, "import", str(tmp_path / "web.json"), "--replace")
    assert code == 0 and out.strip() == "imported web:1"
    (tmp_path / "bad.json").write_text('{"key": "x", "state": {}, "messages": [{"message": 1}]}', encoding="utf-8")
    code, _, err = run(capsys, "sessions", "--store", target, "import", str(tmp_path / "bad.json"))
    assert code == 1 and "bad.json" in err and "record" in err and len(err.splitlines()) == 1
    code, _, err = run(capsys, "sessions", "--store", str(tmp_path / "never"), "import", str(tmp_path / "nothing.json"))
    assert code == 1 and "does not exist" in err and not (tmp_path / "never").exists()


def test_foreign_exports_and_the_openviking_import(store: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "sessions", "--store", store, "export", "telegram:42", "--format", "nanobot", "--out", str(tmp_path / "nb"))
    assert code == 0 and out.startswith("wrote ") and Path(out.split(" ", 1)[1].strip()).is_file()
    code, out, _ = run(capsys, "sessions", "--store", store, "export", "telegram:42", "--format", "openviking",
                       "--out", str(tmp_path / "ov"))
    written = Path(out.split(" ", 1)[1].strip())
    assert code == 0 and written.is_dir()
    code, out, _ = run(capsys, "sessions", "--store", str(tmp_path / "back"), "import-openviking", str(written))
    assert code == 0 and out.startswith("imported ")
    code, out, _ = run(capsys, "sessions", "--store", str(tmp_path / "back"), "import-openviking", str(written), "--skip-existing")
    assert code == 0 and "imported nothing" in out
    code, out, _ = run(capsys, "sessions", "--store", str(tmp_path / "back"), "import-openviking", str(written), "--replace")
    assert code == 0 and out.startswith("imported ")
    code, _, err = run(capsys, "sessions", "--store", store, "export", "telegram:42", "--format", "nanobot")
    assert code == 1 and "give --out DIR" in err
    code, _, err = run(capsys, "sessions", "--store", store, "export", "telegram:42", "--out", str(tmp_path))
    assert code == 1 and "--out is for --format nanobot or openviking" in err


def test_trace_and_draw_a_stored_session(store: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "sessions", "--store", store, "trace", "web:1")
    assert code == 0 and out.startswith("turn 4: deep (max_messages_text_length): window")
    code, out, _ = run(capsys, "sessions", "--store", store, "trace", "web:1", "--json")
    (record,) = json.loads(out)
    assert code == 0 and record["turn"] == 4 and record["type"] == "deep"
    code, out, _ = run(capsys, "sessions", "--store", store, "trace", "telegram:42")
    assert code == 0 and "no resize recorded" in out
    code, out, _ = run(capsys, "sessions", "--store", store, "draw", "web:1", "--out", str(tmp_path / "flow.svg"))
    svg = (tmp_path / "flow.svg").read_text(encoding="utf-8")
    assert code == 0 and "route of the resize at turn 4" in out and svg.startswith("<svg") and "#d9480f" in svg  # the route
    code, out, _ = run(capsys, "sessions", "--store", store, "draw", "web:1", "--out", str(tmp_path / "flow.mmd"), "--no-route")
    mermaid = (tmp_path / "flow.mmd").read_text(encoding="utf-8")
    assert code == 0 and "route of" not in out and "graph TD" in mermaid and "class " not in mermaid
    code, out, _ = run(capsys, "sessions", "--store", store, "draw", "web:1")
    assert code == 0 and "graph TD" in out
    code, _, err = run(capsys, "sessions", "--store", store, "draw", "web:1", "--out", str(tmp_path / "flow.png"))
    assert code == 1 and "as .svg or .mmd" in err


def test_missing_keys_tenants_and_no_progress(store: str, capsys: pytest.CaptureFixture[str]) -> None:
    for command in ("show", "export", "trace", "draw"):
        code, out, err = run(capsys, "sessions", "--store", store, command, "nope")
        assert code == 1 and out == ""
        assert err == "session-graph: no stored session 'nope' for tenant 'default'\n"  # no stray quotes
    code, out, _ = run(capsys, "sessions", "--store", store, "--tenant", "acme", "list", "--no-progress")
    assert code == 0 and out.startswith("t:1\t2 messages")
    code, out, _ = run(capsys, "sessions", "--store", store, "show", "telegram:42", "--all")
    assert code == 0 and "earlier messages not shown" not in out and out.count("] user: ") == 3
    code, out, _ = run(capsys, "sessions", "--store", store, "show", "telegram:42", "--last", "2")
    assert code == 0 and "4 earlier messages not shown" in out
    code, out, _ = run(capsys, "sessions", "--store", store, "export", "telegram:42", "--format", "txt", "--last", "1")
    assert code == 0 and len(out.strip().splitlines()) == 1


@pytest.mark.parametrize("argv", [["export", "big", "--format", "txt"], ["show", "big", "--all"], ["search", "u"]])
def test_piping_into_head_ends_quietly(tmp_path: Path, argv: list[str]) -> None:
    manager = SessionManager(tmp_path / "store")
    manager.save(chat(manager.get_or_create("big"), 1500, size=100))  # ~300 KB of text: more than a pipe holds
    manager.close()
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    command = f"{sys.executable} -m session_graph sessions --store {tmp_path / 'store'} {' '.join(argv)} | head -n 1"
    done = subprocess.run(command, shell=True, capture_output=True, text=True, timeout=120, env=env, cwd=ROOT)
    assert done.returncode == 0 and len(done.stdout.splitlines()) == 1
    assert "Traceback" not in done.stderr and "BrokenPipeError" not in done.stderr and "Exception ignored" not in done.stderr, done.stderr


def test_the_demo_seed_changes_the_conversation(capsys: pytest.CaptureFixture[str]) -> None:
    code, first, _ = run(capsys, "demo", "--turns", "40", "--seed", "3")
    code_again, again, _ = run(capsys, "demo", "--turns", "40", "--seed", "3")
    _, other, _ = run(capsys, "demo", "--turns", "40", "--seed", "4")
    assert code == code_again == 0 and first == again != other


def test_every_documented_command_has_a_test() -> None:
    """The module docstring lists the commands; each appears in a test of the CLI."""
    tests = "".join(p.read_text(encoding="utf-8") for p in (ROOT / "tests").rglob("test_*.py"))
    areas = parser()._subparsers._group_actions[0].choices  # type: ignore[union-attr]
    actions = {"demo": areas["demo"], **areas["sessions"]._subparsers._group_actions[0].choices}  # type: ignore[union-attr]
    for name, command in actions.items():
        assert f'"{name}"' in tests, name
        for action in command._actions:
            if action.option_strings and action.dest != "help":  # -v or --verbose: either spelling
                assert any(f'"{flag}"' in tests for flag in action.option_strings), (name, action.option_strings)
