"""The bounds benchmark runs its parts in processes of their own and reports time, overrun,
peak RSS and the sessions still running."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest
from timing import generous

BENCH = Path(__file__).resolve().parents[1] / "benchmarks" / "bench_bounds.py"


def _bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_bounds", BENCH)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _run(*args: str) -> dict[str, object]:
    done = subprocess.run(
        [sys.executable, str(BENCH), *args], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    report: dict[str, object] = json.loads(done.stdout.strip().splitlines()[-1])
    return report


def test_every_backend_has_a_bomb_corpus_the_bench_reads() -> None:
    bench = _bench()
    for backend in ("sqlite", "duckdb", "postgres", "mysql"):
        entries = bench.corpus(bench.DATA / f"bombs_{backend}.sql")
        assert len(entries) >= 5, backend
        assert all(sql.strip() and kind for _, kind, _, sql in entries)


def test_a_model_fault_ends_in_time_and_under_the_memory_bound() -> None:
    report = _run("--model-fault", "trickle", "--timeout", "1")
    assert report["case"] == "model_trickle" and report["outcome"] == "failed"
    # The bound (0.5 s past the timeout) is the benchmark's figure; here, generous slack.
    assert float(str(report["overrun_s"])) <= generous(0.5)
    assert float(str(report["peak_rss_mb"])) < 1024


@pytest.mark.slow
@pytest.mark.needs_data("spider")
def test_a_corpus_reports_overrun_peak_and_sessions(tmp_path: Path) -> None:
    bench = _bench()
    db = bench.target_url("sqlite", tmp_path)
    report = _run("--corpus", "sqlite", "--db", db, "--timeout", "0.5")
    entries = report["entries"]
    assert isinstance(entries, list) and len(entries) == len(
        bench.corpus(bench.DATA / "bombs_sqlite.sql")
    )
    assert report["sessions_after_1s"] == 0
    assert float(str(report["peak_rss_mb"])) < 1024
