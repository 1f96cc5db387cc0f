"""Type checkers see the package's hints: py.typed ships, and mypy --strict passes a user's file."""

from __future__ import annotations

from pathlib import Path
import subprocess
import sys
import tempfile
import tomllib

import pytest

ROOT = Path(__file__).resolve().parents[1]
USER_CODE = ROOT / "tests" / "typing" / "user_code.py"


def test_py_typed_is_in_the_package_data() -> None:
    assert (ROOT / "session_graph" / "py.typed").is_file()
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert "py.typed" in config["tool"]["setuptools"]["package-data"]["session_graph"]
    assert any(dep.startswith("mypy") for dep in config["project"]["optional-dependencies"]["test"])


def test_mypy_strict_passes_a_user_file_and_catches_a_wrong_call(tmp_path: Path) -> None:
    pytest.importorskip("mypy", reason="mypy is in the test extra: pip install -e '.[test]'")
    wrong = tmp_path / "wrong_call.py"
    wrong.write_text(USER_CODE.read_text(encoding="utf-8").replace("use_memo(messages=4)", 'use_memo(messages="4")'),
                     encoding="utf-8")
    cache = Path(tempfile.gettempdir()) / "session_graph-mypy-cache"  # kept between runs: seconds after the first
    done = subprocess.run([sys.executable, "-m", "mypy", "--strict", "--follow-imports=silent", "--cache-dir", str(cache),
                           "--no-error-summary", str(USER_CODE), str(wrong)],
                          cwd=ROOT, capture_output=True, text=True, timeout=600)
    errors = [line for line in done.stdout.splitlines() if ": error:" in line]
    assert [Path(line.split(":")[0]).name for line in errors] == ["wrong_call.py"], done.stdout + done.stderr
    assert 'Argument "messages" to "use_memo" of "Session" has incompatible type "str"' in errors[0]


def test_mypy_strict_accepts_every_method_session_takes_from_a_package() -> None:
    """``Session`` satisfies each Protocol that types the first parameter of a method it takes by name
    (``commit = session_commit.commit``): else mypy reports an invalid self argument at the call."""
    pytest.importorskip("mypy", reason="mypy is in the test extra: pip install -e '.[test]'")
    cache = Path(tempfile.gettempdir()) / "session_graph-mypy-cache"
    done = subprocess.run([sys.executable, "-m", "mypy", "--strict", "--follow-imports=silent", "--cache-dir", str(cache),
                           "--no-error-summary", str(ROOT / "tests" / "typing" / "facade_code.py")],
                          cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0 and ": error:" not in done.stdout, done.stdout + done.stderr
