"""The fresh-process eval benchmark runs `macsql eval` of each checkout it is given, in turn,
against the scripted server, and reports each one's figures and the rounds it was lower."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.needs_data("spider")
def test_two_checkouts_are_measured_in_turn(spider_dir: Path) -> None:
    done = subprocess.run(
        [
            sys.executable,
            str(ROOT / "benchmarks" / "bench_eval_start.py"),
            *("--checkout", str(ROOT), "--checkout", str(ROOT)),
            *("--limit", "1", "--rounds", "1"),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    runs = re.findall(r"round 1 (\S+): wall ([\d.]+) s, CPU ([\d.]+) s", done.stdout)
    assert [path for path, _, _ in runs] == [str(ROOT), str(ROOT)]
    assert all(float(wall) > 0 and float(cpu) > 0 for _, wall, cpu in runs)
    assert "macsql eval --limit 1, fresh process, 1 rounds, medians:" in done.stdout
    assert re.search(r"CPU lower than the first in [01] of 1 rounds", done.stdout), done.stdout
