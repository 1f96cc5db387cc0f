"""bench/bench_real_model.py --fake: the opt-in real-model check runs end to end on the scripted
fake that answers in the shapes real models write (what CI runs; a real model is opt-in)."""

from __future__ import annotations

import importlib.util
from pathlib import Path
import sys

import pytest

BENCH = Path(__file__).resolve().parents[1] / "bench" / "bench_real_model.py"


def load_bench():  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location("bench_real_model", BENCH)
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    sys.modules["bench_real_model"] = module
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module


def test_the_fake_run_reads_every_messy_shape_and_keeps_the_facts(capsys: pytest.CaptureFixture[str]) -> None:
    bench = load_bench()
    runs = bench.main(["--fake"])
    out = capsys.readouterr().out
    assert out.startswith("model: fake (scripted messy shapes); conversation: 22 messages, 12 planted facts")
    memo, summary, commit = (bench.judged(runs[path]["meter"].calls) for path in ("memo", "summary", "commit"))
    assert memo[0] == 1 and "cut" in memo[2][0]  # only the reply cut at the output cap is refused...
    assert memo[1] == len(runs["memo"]["meter"].calls)  # ...where the pre-issue parser refused every one
    assert summary[0] == 0 and runs["summary"]["ignored"] == "1/0"  # the unchanged summary was asked again, then taken in
    assert commit[0] == 0 and commit[1] >= 2 and runs["commit"]["statuses"] == ["committed", "committed"]
    assert runs["memo"]["seen"] == runs["summary"]["seen"] == 12 and runs["commit"]["facts"] == 12
    assert {call["kind"] for call in runs["commit"]["meter"].calls} == {"commit_summarize", "commit_extract", "commit_decide"}


def test_the_bench_needs_a_model_named() -> None:
    with pytest.raises(SystemExit):
        load_bench().main([])


def test_the_recorded_replies_read_again(capsys: pytest.CaptureFixture[str]) -> None:
    data = Path(__file__).parent / "data" / "real-model-replies.json"
    assert load_bench().main(["--replay", str(data)]) == {}
    rows = {line.split()[0]: line.split()[1:] for line in capsys.readouterr().out.splitlines()[2:]}
    assert rows["memo"] == ["6", "0", "5", "-"] and rows["summary"] == ["4", "0", "0", "1"]
    assert rows["commit_extract"] == ["1", "1", "1", "-"]  # cut by the recording's output cap: refused, with its reason
