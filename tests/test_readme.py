"""The README's two commands stay at its top, and its Python examples run as written."""

from __future__ import annotations

from pathlib import Path
import re

import pytest

README = (Path(__file__).parents[1] / "README.md").read_text()
EXAMPLES = re.findall(r"```python\n(.*?)```", README, re.DOTALL)


def test_the_two_setup_commands_open_the_readme() -> None:
    first_block = re.search(r"```bash\n(.*?)```", README, re.DOTALL)
    assert first_block and README.index(first_block.group(0)) < README.index("\n## ")
    commands = first_block.group(1).strip().splitlines()
    assert commands == [
        "python3 -m pip install . && python3 -m session_graph",
        'python3 -m pip install -e ".[test]" && python3 -m pytest',
    ]
    ci = (Path(__file__).parents[1] / ".ci" / "run").read_text()
    assert commands[1] in ci


@pytest.mark.parametrize("example", EXAMPLES, ids=[f"example{i}" for i in range(len(EXAMPLES))])
def test_readme_example_runs(example: str) -> None:
    exec(compile(example, "README.md", "exec"), {})


def test_there_are_examples() -> None:
    assert len(EXAMPLES) >= 3
