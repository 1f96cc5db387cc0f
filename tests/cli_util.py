"""Running the command line in a test: its exit code and what it printed."""

from __future__ import annotations

import pytest

from session_graph.cli import main


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    """``session-graph *argv`` in this process: (exit code, stdout, stderr)."""
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err
