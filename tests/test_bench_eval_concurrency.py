"""The throughput benchmark script runs end to end, once and repeated (on a few items)."""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.needs_data("spider"), pytest.mark.slow]  # the benchmark reads Spider

BENCH = Path(__file__).resolve().parents[1] / "benchmarks" / "bench_eval_concurrency.py"
SMALL = ["--limit", "12", "--delay", "0.01", "--concurrency", "4", "--processes", "1"]


def _run(*extra: str) -> list[str]:
    done = subprocess.run(
        [sys.executable, str(BENCH), *SMALL, *extra], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip().splitlines()


def test_one_run_reports_its_figures_and_verdict() -> None:
    lines = _run()
    figures = json.loads("\n".join(lines[:-1]))
    assert figures["items"] == 12 and figures["ex"] == 100.0 and figures["failed"] == 0
    assert figures["model_calls"] == figures["server_requests"] > 0
    assert 1 <= figures["server_peak_in_flight"] <= 4  # the run's --concurrency
    ideal = figures["model_calls"] * 0.01 / 4
    assert abs(figures["ideal_s"] - round(ideal, 2)) < 1e-9
    assert lines[-1].startswith(f"wall {figures['wall_s']}s vs ideal {figures['ideal_s']}s")


def test_repeat_runs_fresh_processes_and_reports_the_median() -> None:
    lines = _run("--repeat", "3")
    assert [line.split(":")[0] for line in lines[:3]] == ["run 1/3", "run 2/3", "run 3/3"]
    summary = json.loads("\n".join(lines[3:-1]))
    assert summary["runs"] == 3 and len(summary["wall_s"]) == 3
    assert summary["wall_s"] == sorted(summary["wall_s"])
    assert summary["median_wall_s"] == round(statistics.median(summary["wall_s"]), 2)
    assert summary["ex"] == [100.0] and summary["failed"] == 0
    # Three tiny runs cannot come near 1.25x of a 0.03 s ideal: the count must say so.
    assert summary["within_target"] == 0
    assert lines[-1].endswith("0 of 3 runs within the 1.25x target")
