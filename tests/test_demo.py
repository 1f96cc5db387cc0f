"""The offline demo replays 200+ turns and prints one line per resize."""

from __future__ import annotations

import re
import subprocess
import sys

from session_graph.demo import conversation, main


def test_the_conversation_is_long_and_deterministic() -> None:
    messages = conversation()
    assert sum(1 for m in messages if m["role"] == "user") >= 200
    assert messages == conversation()
    assert any(m.get("tool_calls") for m in messages) and any(isinstance(m["content"], list) for m in messages)


def test_demo_prints_each_resize_and_a_summary(capsys) -> None:  # type: ignore[no-untyped-def]
    assert main([]) == 0
    out = capsys.readouterr().out
    sections = out.split("Session with ")[1:]
    assert len(sections) == 2 and 'limit={"chars": 4000}' in sections[1]
    line = re.compile(r"turn +\d+ +(lite|deep) +\S+ +severity +\d+ +window +\d+ -> +\d+ chars, +\d+ -> +\d+ msgs")
    for section in sections:
        assert len(line.findall(section)) >= 5
        assert "summary: 560 messages kept in full, 240 turns" in section
    after = [int(n) for n in re.findall(r"-> +(\d+) chars", sections[1])]
    assert after and max(after) < 4000 + 6000  # only the pasted log can stay over, alone


def test_python_dash_m_runs_offline() -> None:
    result = subprocess.run([sys.executable, "-m", "session_graph", "--turns", "30"], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert "summary:" in result.stdout
