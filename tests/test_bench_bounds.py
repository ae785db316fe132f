"""The bounds benchmark runs a case in its own process and reports time, overrun and peak RSS."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from timing import generous

BENCH = Path(__file__).resolve().parents[1] / "benchmarks" / "bench_bounds.py"


def _case(name: str) -> dict[str, object]:
    done = subprocess.run(
        [sys.executable, str(BENCH), "--case", name], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    report: dict[str, object] = json.loads(done.stdout.strip().splitlines()[-1])
    return report


@pytest.mark.parametrize(
    ("case", "outcome"),
    [
        # The SQLite cases run on Spider's concert_singer.
        pytest.param(
            "sqlite_big_cells", "result_too_large", marks=pytest.mark.needs_data("spider")
        ),
        pytest.param("sqlite_slow_steps", "timeout", marks=pytest.mark.needs_data("spider")),
        ("model_trickle", "failed"),
    ],
)
def test_a_case_ends_in_time_and_under_the_memory_bound(case: str, outcome: str) -> None:
    report = _case(case)
    assert report["case"] == case and report["outcome"] == outcome
    # The bound (0.5 s past the timeout) is the benchmark's figure; here, generous slack.
    assert float(report["overrun_s"]) <= generous(0.5)
    # 100 cells of 40 MB peaked at 3.9 GB before the byte budget
    assert float(report["peak_rss_mb"]) < 600
