"""Time and memory bounds whatever the SQL, the data or the model does.

Each case of issue 13 runs in its own Python process, so its peak resident set is its own
(VmHWM of that process). Per backend the script prints each case's time, its overrun past
its timeout, its outcome and its peak RSS, then the worst overrun and the highest peak.

    python benchmarks/bench_bounds.py                 # every case (PostgreSQL needs MACSQL_PG_URL)
    python benchmarks/bench_bounds.py --case NAME     # one case, as JSON
    python benchmarks/bench_bounds.py --backend sqlite

The rule it checks: control is back within the timeout + 0.5 s, and the peak RSS of every case
stays under `RSS_BOUND_MB`.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
SPIDER = Path(os.environ.get("MACSQL_DATA_DIR", ROOT.parent / "shared" / "data")) / "spider"
CONCERT = SPIDER / "database" / "concert_singer" / "concert_singer.sqlite"
SLACK_S = 0.5
RSS_BOUND_MB = 600

SLOW_STEPS = (
    "WITH RECURSIVE r(i) AS (SELECT 1 UNION ALL SELECT i+1 FROM r WHERE i<400) "
    "SELECT sum(length(replace(printf('%.*c',10000000+i,'a'),'a','bb'))) FROM r"
)
SQLITE_BIG_CELLS = (
    "WITH RECURSIVE r(i) AS (SELECT 1 UNION ALL SELECT i+1 FROM r WHERE i<100) "
    "SELECT printf('%.*c',40000000+i,'q') FROM r"
)
SQLITE_KILOBYTE_ROWS = (
    "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) "
    "SELECT x, printf('%.1000c', 'r') FROM c"
)
PG_KILOBYTE_ROWS = "SELECT g, repeat('r', 1000) FROM generate_series(1, 100000000) g"


def _peak_mb() -> float:
    """This process's own peak RSS. Linux keeps `ru_maxrss` across exec, so a process started
    from a large parent (a test runner) would report the parent's size: VmHWM is this image's."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _pg_url() -> str:
    from macsql.database.loaders.postgres import database_url

    admin = os.environ.get("MACSQL_PG_URL", "")
    if not admin:
        raise SystemExit("MACSQL_PG_URL is not set")
    return database_url(admin, "concert_singer")


Ran = tuple[str, str, float]
"""A case's outcome, a detail, and the seconds of the bounded call alone."""


def _timed(call: Callable[[], tuple[str, str]]) -> Ran:
    started = time.monotonic()
    outcome, detail = call()
    return outcome, detail, time.monotonic() - started


def _execute(db: str, sql: str, timeout: float) -> Ran:
    """The executor's path under the Context defaults (row cap 100, 64 MB)."""
    from macsql.core.context import Context
    from macsql.database.connection import resolve_database
    from macsql.database.execution import execute_sql

    ctx = Context()
    ref = resolve_database(db)

    def run() -> tuple[str, str]:
        result = execute_sql(
            ref, sql, timeout=timeout, max_rows=ctx.max_rows, max_bytes=ctx.max_result_bytes
        )
        return result.outcome.value, result.error or ""

    return _timed(run)


def _score(db: str, sql: str, timeout: float) -> Ran:
    """A predicted query run as the scorer runs it (its row cap and byte budget)."""
    from macsql.evals.scoring import Scorer

    scorer = Scorer("spider", timeout=timeout)
    scorer._ref(db)  # resolved outside the measured call

    def score() -> tuple[str, str]:
        run = scorer._run(db, sql)
        return ("ok" if run.ok else str(run.failure)), run.error or ""

    return _timed(score)


def _schema_of_blobs(timeout: float) -> Ran:
    from macsql.database.connection import resolve_database
    from macsql.database.schema import build_schema

    folder = Path(tempfile.mkdtemp(prefix="macsql-bench-bounds-"))
    path = folder / "blobs.sqlite"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE doc (id INTEGER PRIMARY KEY, kind TEXT, body BLOB)")
    blob = os.urandom(10 * 1024 * 1024)
    conn.executemany("INSERT INTO doc (kind, body) VALUES (?, ?)", [("pdf", blob)] * 12)
    conn.commit()
    conn.close()
    del blob
    try:
        ref = resolve_database(str(path))
        started = time.monotonic()
        schema = build_schema(ref, timeout=timeout)
        elapsed = time.monotonic() - started
        doc = schema.table("doc")
        kind = doc.column("kind") if doc else None
        return "ok", f"examples of kind: {kind.examples if kind else None}", elapsed
    finally:
        path.unlink()
        folder.rmdir()


def _model(fault: str, timeout: float) -> Ran:
    from macsql.llm.calls import call_model
    from macsql.llm.settings import ModelSettings
    from macsql.testing.scripted import ScriptedOpenAIServer, Silent, Trickle

    replies: dict[str, Any] = {
        "trickle": Trickle(interval=0.3),
        "silent": Silent(),
        "http_500": 500,
    }
    with ScriptedOpenAIServer(lambda _prompt: replies[fault]) as server:
        settings = ModelSettings(
            model="openai:scripted",
            base_url=server.base_url,
            api_key="k",
            timeout=timeout,
            max_retries=2,
        )
        started = time.monotonic()
        reply = call_model(settings, "decomposer", "hello")
        elapsed = time.monotonic() - started
        outcome = "failed" if reply.failed else "ok"
        return outcome, f"{reply.error} ({server.requests} requests)", elapsed


# name: (backend, timeout, what it does, run)
CASES: dict[str, tuple[str, float, str, Callable[[float], Ran]]] = {
    "sqlite_slow_steps": (
        "sqlite",
        1.0,
        "400 replace() steps of 10-20 MB strings",
        lambda t: _execute(str(CONCERT), SLOW_STEPS, t),
    ),
    "sqlite_big_cells": (
        "sqlite",
        10.0,
        "100 rows x 40 MB cells, row cap 100",
        lambda t: _execute(str(CONCERT), SQLITE_BIG_CELLS, t),
    ),
    "sqlite_value_bomb": (
        "sqlite",
        2.0,
        "one 2 GB printf(): one step of ~10 s",
        lambda t: _execute(str(CONCERT), "SELECT length(printf('%.*c', 2000000000, 'x'))", t),
    ),
    "sqlite_scoring_kilobyte_rows": (
        "sqlite",
        2.0,
        "scoring: endless recursive CTE of 1 KB rows",
        lambda t: _score(str(CONCERT), SQLITE_KILOBYTE_ROWS, t),
    ),
    "sqlite_schema_blobs": (
        "sqlite",
        2.0,
        "schema sampling of a table of 10 MB BLOBs",
        _schema_of_blobs,
    ),
    "pg_uncancellable": (
        "postgres",
        1.0,
        "md5(repeat('x', 1e9)): does not check for cancel",
        lambda t: _execute(_pg_url(), "SELECT md5(repeat('x', 1000000000))", t),
    ),
    "pg_big_cells": (
        "postgres",
        10.0,
        "100 rows x 40 MB cells, row cap 100",
        lambda t: _execute(
            _pg_url(), "SELECT repeat('y', 40000000 + g) FROM generate_series(1, 100) g", t
        ),
    ),
    "pg_scoring_kilobyte_rows": (
        "postgres",
        2.0,
        "scoring: 1e8 rows of 1 KB",
        lambda t: _score(_pg_url(), PG_KILOBYTE_ROWS, t),
    ),
    "model_trickle": (
        "model",
        1.0,
        "server trickles a byte every 0.3 s",
        lambda t: _model("trickle", t),
    ),
    "model_silent": ("model", 1.0, "server never answers", lambda t: _model("silent", t)),
    "model_http_500": ("model", 1.0, "HTTP 500 on every request", lambda t: _model("http_500", t)),
}


def run_case(name: str) -> dict[str, Any]:
    """Run one case in this process: its time, outcome and this process's peak RSS."""
    backend, timeout, what, run = CASES[name]
    import macsql.database.execution  # noqa: F401  (imports are not part of any case's time)

    if backend == "model":
        import langchain_openai  # noqa: F401

    baseline = _peak_mb()
    outcome, detail, elapsed = run(timeout)
    return {
        "case": name,
        "backend": backend,
        "what": what,
        "timeout_s": timeout,
        "elapsed_s": round(elapsed, 3),
        "overrun_s": round(max(0.0, elapsed - timeout), 3),
        "outcome": outcome,
        "detail": detail[:160],
        "peak_rss_mb": round(_peak_mb(), 1),
        "rss_after_imports_mb": round(baseline, 1),
    }


def run_in_child(name: str) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, __file__, "--case", name],
        capture_output=True,
        text=True,
        timeout=300,
    )
    if done.returncode != 0:
        raise SystemExit(f"case {name} failed:\n{done.stderr}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--case", choices=sorted(CASES), help="run one case here, print JSON")
    parser.add_argument("--backend", choices=["sqlite", "postgres", "model", "all"], default="all")
    args = parser.parse_args()
    if args.case:
        print(json.dumps(run_case(args.case)))
        return
    backends = ["sqlite", "postgres", "model"] if args.backend == "all" else [args.backend]
    if "postgres" in backends and not os.environ.get("MACSQL_PG_URL"):
        print("postgres: skipped (MACSQL_PG_URL is not set)")
        backends.remove("postgres")
    within = True
    for backend in backends:
        results = [run_in_child(n) for n, c in CASES.items() if c[0] == backend]
        print(f"{backend}:")
        for r in results:
            print(
                f"  {r['case']:<30} timeout {r['timeout_s']:>4g}s  took {r['elapsed_s']:6.2f}s  "
                f"overrun {r['overrun_s']:5.2f}s  peak RSS {r['peak_rss_mb']:6.1f} MB  "
                f"{r['outcome']:<16} ({r['what']})"
            )
        worst = max(r["overrun_s"] for r in results)
        peak = max(r["peak_rss_mb"] for r in results)
        ok = worst <= SLACK_S and peak <= RSS_BOUND_MB
        within = within and ok
        print(
            f"  => worst overrun {worst:.2f}s over the timeout (bound {SLACK_S}s), "
            f"peak RSS {peak:.1f} MB (bound {RSS_BOUND_MB} MB): {'within' if ok else 'OVER'}"
        )
    sys.exit(0 if within else 1)


if __name__ == "__main__":
    main()
