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
    assert all("a pasted log" in s for s in sections)
    assert "session.plot()" in out and "notebooks/" in out


def test_what_the_demo_claims_matches_its_numbers(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([]) == 0
    out = capsys.readouterr().out
    assert "judge_resize() applies the policy" in out and "'deep' resize" in out and "'lite' resize" in out
    flat = re.sub(r"\s+", " ", out)
    notes = re.findall(r"window +\d+ -> +(\d+) msgs, +[\d,]+ -> +([\d,]+) (chars|tokens)[^\n]*\n +\((a pasted log.*?)\)\n(?! {13})",
                       out, flags=re.S)
    assert len(notes) == 4
    for messages, after, unit, note in notes:
        note = re.sub(r"\s+", " ", note)
        size = int(after.replace(",", ""))
        limit = 4000 if unit == "chars" else 1500
        if "only the newest" in note:  # "fit" is claimed only where it is true
            assert size <= limit and f"only the newest {messages} msg" in note
        else:
            assert size > limit and f"({messages} msgs, {after} {unit}) is over the {limit:,}-{unit[:-1]} limit" in note
            assert "view() cuts it to fit" in note
    # lite mode's many resizes are explained with the rule and counted
    why = re.search(r"Why so many: lite mode prunes to 100% of the limit \(session.resize.prune_to_ratio 1.0.*?resized on "
                    r"(\d+) of 120 turns.*?prune_to_ratio 0.8 \(prune to 3,200 chars\) it resizes on (\d+) turns", flat)
    assert why is not None, flat
    lite = re.split(r"^\d\. ", out, flags=re.M)[1]
    total = int(re.search(r"(\d+) resizes in all", lite).group(1))
    assert int(why.group(1)) == total > int(why.group(2))  # one resize per turn at most, and fewer with a deeper prune


def test_a_bad_plot_path_fails_before_the_demo_runs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for path, reason in ((tmp_path / "missing" / "x.png", "does not exist"), (tmp_path / "x.txt", "name a .png, .svg or .pdf"),
                         (tmp_path, "name a .png")):
        assert main(["--plot", str(path)]) == 2
        out, err = capsys.readouterr()
        assert out == "" and reason in err  # nothing ran


def test_demo_module_stays_readable() -> None:
    assert len(Path(demo.__file__).read_text(encoding="utf-8").splitlines()) < 250


def test_python_dash_m_runs_offline() -> None:
    result = subprocess.run([sys.executable, "-m", "session_graph", "--turns", "40"], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert "Full history:" in result.stdout
