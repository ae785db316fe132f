"""What an eval does around its items (issue 31): nothing heavy on the items' path."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from chart_support import ex_labels, read_chart
from conftest import concert_db, spider_sample

# Runs in a fresh interpreter: this test process may have imported matplotlib already.
_RUN = """
import asyncio, json, sys
from macsql.evals.options import EvalOptions
from macsql.evals.runner import run_eval

options = EvalOptions(dataset="spider", data_dir=sys.argv[1], out=sys.argv[2], gold=True,
                      progress=False)
result = asyncio.run(run_eval(options))
print(json.dumps({"records": len(result.records), "matplotlib": "matplotlib" in sys.modules}))
"""


def test_an_eval_never_loads_a_plotting_library_and_its_chart_shows_the_run(
    tmp_path: Path,
) -> None:
    """The chart is an SVG written as text: drawing it with matplotlib cost about a quarter of
    a 1-question eval's CPU, in a fresh process."""
    out = tmp_path / "run"
    done = subprocess.run(
        [sys.executable, "-c", _RUN, str(spider_sample()), str(out)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert seen == {"records": seen["records"], "matplotlib": False} and seen["records"] > 1
    summary = json.loads((out / "summary.json").read_text())
    ex, attempts = read_chart(out / "summary.svg")
    levels = [n for n in summary["by_difficulty"] if n != "all"]
    assert ex.value_labels == ex_labels(summary, levels)
    assert ex.categories == [*levels, "all"]
    hist = summary["attempts_histogram"]
    assert attempts.categories == list(hist) and attempts.value_labels == [
        str(v) for v in hist.values()
    ]
    assert "![EX by difficulty and attempts](summary.svg)" in (out / "summary.md").read_text()
    assert not (out / "summary.png").exists()


_FORK_AFTER_A_QUERY = """
import json, multiprocessing, sys
from macsql.database.connection import resolve_database
from macsql.database.execution import execute_sql
from macsql.evals.scheduler import start_method

RUNAWAY = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c"

def child(out):
    out.put(str(execute_sql(resolve_database(sys.argv[1]), RUNAWAY, timeout=0.3).outcome))

if __name__ == "__main__":
    first = str(execute_sql(resolve_database(sys.argv[1]), "SELECT 1").outcome)
    method = start_method()  # the query's watchdog thread is still alive, waiting
    ctx = multiprocessing.get_context("fork")
    out = ctx.Queue()
    worker = ctx.Process(target=child, args=(out,))
    worker.start()
    print(json.dumps({"first": first, "method": method, "child": out.get(timeout=60)}))
    worker.join()
"""


def test_an_eval_right_after_a_query_forks_and_its_child_still_bounds_queries(
    tmp_path: Path,
) -> None:
    """The query watchdog outlives its last alarm by up to a query timeout; waiting, it holds
    no lock, so the eval still forks its workers (a spawned one imports everything again and
    cannot use a model registered in-process), and the child's own watchdog stops a query."""
    script = tmp_path / "fork_after_query.py"
    script.write_text(_FORK_AFTER_A_QUERY)
    done = subprocess.run(
        [sys.executable, str(script), str(concert_db())],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert seen == {"first": "ok", "method": "fork", "child": "timeout"}
