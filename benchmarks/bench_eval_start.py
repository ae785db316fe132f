"""Benchmark: a whole `macsql eval` in a fresh process, per checkout, what a user's run costs.

Run: python benchmarks/bench_eval_start.py [--checkout DIR ...] [--limit 1] [--rounds 5]

Each round runs `macsql eval --dataset spider --concurrency 1` on the first `--limit` Spider dev
questions once per checkout (with `PYTHONPATH` at it; the order alternates round by round), in a
fresh process with a fresh, empty cache folder, against `bench_official.py`'s scripted server
(its own process: the first Decomposer answer fails for every other question, so that the
Refiner runs). Wall runs from spawn to exit; CPU is the eval process's. With `--limit 1` that
is what a run pays once: the interpreter, the imports, loading the dataset, the reports.
Without `--checkout`, the code this script belongs to is measured.

Prints each run, then per checkout the medians, and for each checkout after the first how many
rounds it was lower than the first.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_official import Server, run_macsql

HERE = Path(__file__).resolve().parents[1]


def eval_run(checkout: Path, limit: int, base_url: str) -> tuple[float, float]:
    """Wall and CPU seconds of one `macsql eval` of `checkout`'s code in a fresh process."""
    out = Path(tempfile.mkdtemp(prefix="macsql-bench-start-"))
    wall, cpu, _ = run_macsql(limit, out, base_url, pythonpath=checkout)
    shutil.rmtree(out)  # kept when the run fails: run_macsql names its log there
    return wall, cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--checkout", type=Path, action="append", default=[])
    parser.add_argument("--limit", type=int, default=1)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    checkouts = [c.resolve() for c in args.checkout] or [HERE]
    # Per position, not per path: the same checkout twice is an A/A run, the noise floor.
    runs: list[list[tuple[float, float]]] = [[] for _ in checkouts]
    server = Server()
    try:
        print(f"load average before: {os.getloadavg()[0]:.2f}", flush=True)
        for r in range(args.rounds):
            order = list(enumerate(checkouts))
            for i, checkout in order if r % 2 == 0 else order[::-1]:
                wall, cpu = eval_run(checkout, args.limit, server.base_url)
                runs[i].append((wall, cpu))
                print(f"round {r + 1} {checkout}: wall {wall:.3f} s, CPU {cpu:.3f} s", flush=True)
        print(f"load average after: {os.getloadavg()[0]:.2f}")
    finally:
        server.close()
    print(f"\nmacsql eval --limit {args.limit}, fresh process, {args.rounds} rounds, medians:")
    for i, (checkout, figures) in enumerate(zip(checkouts, runs, strict=True)):
        wall = statistics.median(w for w, _ in figures)
        cpu = statistics.median(c for _, c in figures)
        line = f"  {checkout}: wall {wall:.3f} s, CPU {cpu:.3f} s"
        if i > 0:
            lower = sum(c < c0 for (_, c), (_, c0) in zip(figures, runs[0], strict=True))
            line += f"; CPU lower than the first in {lower} of {len(figures)} rounds"
        print(line)


if __name__ == "__main__":
    main()
