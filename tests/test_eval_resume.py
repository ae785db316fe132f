"""Killing an eval at any moment and resuming it yields every item exactly once."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from conftest import SPIDER

from macsql.evals.options import EvalOptions
from macsql.evals.results import read_results
from macsql.evals.runner import run_eval_sync

SLOW_PIPELINE = Path(__file__).parent / "data" / "eval_slow_pipeline.py"
pytestmark = pytest.mark.needs_data("spider")


def _indexes(path: Path) -> Counter[int]:
    return Counter(json.loads(line)["index"] for line in path.read_text().splitlines())


def _options(out: Path, **kw: Any) -> EvalOptions:
    values: dict[str, Any] = {
        "dataset": "spider",
        "data_dir": str(SPIDER),
        "out": str(out),
        "progress": False,
    }
    values.update(kw)
    return EvalOptions(**values)


def test_torn_last_line_is_dropped_and_the_item_rerun(tmp_path: Path) -> None:
    out = tmp_path / "run"
    run_eval_sync(_options(out, gold=True, limit=100))
    results = out / "results.jsonl"
    lines = results.read_text().splitlines(keepends=True)
    # A kill in the middle of writing line 41: 40 whole lines and half of the next one.
    results.write_text("".join(lines[:40]) + lines[40][: len(lines[40]) // 2])
    kept = read_results(results, repair=False)
    assert len(kept) == 40

    resumed = run_eval_sync(_options(out, gold=True, limit=100, resume=True))
    counts = _indexes(results)
    assert sorted(counts) == list(range(100))
    assert set(counts.values()) == {1}
    assert resumed.summary["n_scored"] + resumed.summary["n_skipped"] == 100
    assert resumed.summary["ex"] == 100.0
    assert len((out / "pred.sql").read_text().splitlines()) == 100


def test_resume_of_a_finished_run_repeats_nothing(tmp_path: Path) -> None:
    out = tmp_path / "run"
    run_eval_sync(_options(out, gold=True, limit=20))
    before = (out / "results.jsonl").read_text()
    again = run_eval_sync(_options(out, gold=True, limit=20, resume=True))
    assert (out / "results.jsonl").read_text() == before
    assert again.summary["n_scored"] == 20
    run_info = json.loads((out / "run.json").read_text())
    assert run_info["invocations"] == 2


@pytest.mark.slow
def test_sigkill_mid_run_then_resume_gives_each_item_once(tmp_path: Path) -> None:
    out = tmp_path / "killed"
    limit = 200
    cmd = [
        sys.executable,
        "-m",
        "macsql.cli.evals",
        "eval",
        "--dataset",
        "spider",
        "--data-dir",
        str(SPIDER),
        "--pipeline",
        f"{SLOW_PIPELINE}:graph",
        "--limit",
        str(limit),
        "--concurrency",
        "4",
        "--out",
        str(out),
        "--no-progress",
    ]
    env = {**os.environ, "EVAL_FAKE_DELAY": "0.05"}
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    results = out / "results.jsonl"
    deadline = time.monotonic() + 60
    try:
        while time.monotonic() < deadline:
            if results.is_file() and results.read_text().count("\n") >= 40:
                break
            if proc.poll() is not None:
                pytest.fail(f"the run ended before it could be killed: {proc.stderr.read()!r}")
            time.sleep(0.02)
        proc.send_signal(signal.SIGKILL)
    finally:
        proc.wait(timeout=30)
    written = results.read_text().count("\n")
    assert 40 <= written < limit, written
    assert not (out / "summary.json").exists()

    resumed = subprocess.run(
        [*cmd, "--resume"], env=env, capture_output=True, text=True, timeout=120
    )
    assert resumed.returncode == 0, resumed.stderr
    counts = _indexes(results)
    assert sorted(counts) == list(range(limit))
    assert set(counts.values()) == {1}, [i for i, c in counts.items() if c > 1]
    summary = json.loads((out / "summary.json").read_text())
    assert summary["n_scored"] + summary["n_skipped"] == limit
    assert summary["tokens_per_agent"]["decomposer"]["calls"] == summary["n_scored"]
    assert len((out / "pred.sql").read_text().splitlines()) == limit
