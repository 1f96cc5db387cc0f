"""The offline demo: four modes, one line per resize, nothing lost, short enough to read."""

from __future__ import annotations

from pathlib import Path
import re
import subprocess
import sys

import pytest

from session_graph import demo
from session_graph.demo import conversation, main


def test_the_conversation_is_deterministic_and_varied() -> None:
    messages = conversation()
    assert sum(1 for m in messages if m["role"] == "user") == 120
    assert messages == conversation()
    assert any(m.get("tool_calls") for m in messages) and any(isinstance(m["content"], list) for m in messages)
    assert sum(1 for m in conversation(200) if m["role"] == "user") == 200


def test_demo_shows_four_modes_and_loses_nothing(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([]) == 0
    out = capsys.readouterr().out
    sections = re.split(r"^\d\. ", out, flags=re.M)[1:]
    assert [s.split(":")[0] for s in sections] == ["Lite mode", "Memo mode", "A token budget", "Summary mode"]
    line = re.compile(r"turn +(\d+) +.+window +(\d+) -> +(\d+) msgs, +([\d,]+) -> +([\d,]+) (chars|tokens)")
    for section in sections:
        found = line.findall(section)
        assert len(found) >= 5, section
        assert "Full history: 280 messages, nothing lost" in section
        assert "resizes in all" in section
    assert "memo: {" in sections[1] and "summary: " in sections[3]
    assert "within the 1,500-token budget" in sections[2]
    # the collapse after a pasted log is explained where it happens
    assert all("a pasted log took the window" in s for s in sections)
    assert "session.plot()" in out and "notebooks/" in out


def test_demo_module_stays_readable() -> None:
    assert len(Path(demo.__file__).read_text(encoding="utf-8").splitlines()) < 250


def test_python_dash_m_runs_offline() -> None:
    result = subprocess.run([sys.executable, "-m", "session_graph", "--turns", "40"], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert "Full history:" in result.stdout
