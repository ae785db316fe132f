"""The overhead benchmark runs end to end on a few questions."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.needs_data("spider"), pytest.mark.slow]  # the benchmark reads Spider

BENCH = Path(__file__).resolve().parents[1] / "benchmarks" / "bench_overhead.py"


def test_the_cases_report_cpu_per_question_and_half_the_first_answers_are_refined(
    tmp_path: Path,
) -> None:
    figures = tmp_path / "runs.json"
    done = subprocess.run(
        [sys.executable, str(BENCH), "--limit", "6", "--rounds", "1", "--concurrency", "1",
         "--cases", "graph,ainvoke,sync,eval", "--no-throughput", "--json", str(figures)],
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    runs = json.loads(figures.read_text())
    assert set(runs) == {
        "graph, in-process model | 1",
        "graph.ainvoke, in-process model | 1",
        "graph.invoke, in-process model | 1",
        "eval | 1",
    }
    for (run,) in runs.values():
        assert run["cpu_ms"] > 0 and run["wall_ms"] > 0
        # The Decomposer's SQL fails for every other question: one Refiner call for each.
        assert run["calls_per_q"] == 1.5
    assert runs["graph, in-process model | 1"][0]["gold_sql_share"] == 1.0
    assert runs["eval | 1"][0]["ex"] == 100.0
    assert "eval" in done.stdout and "graph.invoke, in-process model" in done.stdout
