"""Time, memory and sessions bounds whatever the SQL, the data or the model does.

Per backend, every statement of its bomb corpus (`tests/data/bombs_<backend>.sql`: runaway
queries, uninterruptible functions, size bombs) runs through `execute_sql` with no row cap and
the default byte budget, the whole corpus in one fresh Python process. The script prints each
statement's time, overrun past its timeout and outcome, then per backend:

- the worst overrun over the timeout (target: at most 0.5 s),
- the peak RSS of that process over the whole corpus (target: under 1 GB),
- the server sessions (or, for SQLite and DuckDB, the statement threads) of macsql's still
  running one second after the last statement returned (target: 0).

It also runs the model's faults (a server that trickles, never answers, or fails) and the
SQLite and DuckDB bombs end to end: `macsql ask` and a three-item `macsql eval` whose scripted
model answers with a bomb, each in its own process (peak RSS of that process).

    python benchmarks/bench_bounds.py                      # every backend with a server set up
    python benchmarks/bench_bounds.py --backend duckdb
    python benchmarks/bench_bounds.py --timeout 2

PostgreSQL needs MACSQL_PG_URL and MACSQL_PG_READER_URL, MariaDB MACSQL_MYSQL_URL and
MACSQL_MYSQL_READER_URL (`scripts/ci_postgres.sh`, `scripts/ci_mariadb.sh`), with Spider's
concert_singer loaded; the others need Spider's data (MACSQL_DATA_DIR or ../shared/data).
Exit status 0 when every target holds.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data"
SPIDER = Path(os.environ.get("MACSQL_DATA_DIR", ROOT.parent / "shared" / "data")) / "spider"
CONCERT = SPIDER / "database" / "concert_singer" / "concert_singer.sqlite"
SLACK_S = 0.5
RSS_BOUND_MB = 1024
BUDGET = 64 * 1024 * 1024  # Context.max_result_bytes' default
HEADER = re.compile(r"^-- @@ (?P<kind>\w+) \| (?P<note>.+)$")
SQLITE_BOMB = "SELECT " + ", ".join(
    f"replace(printf('%.*c', 30000000, 'a'), 'a', '{c}{c}') AS c{i}"
    for i, c in enumerate("bcdefghijklmnopqrstuvwxyzBCDEF")
)
DUCKDB_BOMB = "SELECT list(i) AS l FROM range(30000000) t(i)"


def corpus(path: Path) -> list[tuple[int, str, str, str]]:
    """(line, kind, note, sql) of each entry of a bomb corpus."""
    entries: list[tuple[int, str, str, str]] = []
    current: tuple[int, str, str] | None = None
    body: list[str] = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        match = HEADER.match(line)
        if match:
            if current:
                entries.append((*current, "\n".join(body).strip()))
            current, body = (number, match["kind"], match["note"]), []
        elif current is not None:
            body.append(line)
    if current:
        entries.append((*current, "\n".join(body).strip()))
    return entries


def peak_mb() -> float:
    """This process's own peak RSS (VmHWM: Linux keeps ru_maxrss across exec)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


# --- sessions still running ----------------------------------------------------------------


def _user_of(url: str) -> str:
    from sqlalchemy.engine import make_url

    return str(make_url(url).username)


def sessions_still_running(backend: str, url: str) -> int:
    """Sessions of macsql's role still running a statement (PostgreSQL, MariaDB, read with the
    admin URL), or this process's statement threads still busy (SQLite, DuckDB)."""
    if backend in ("sqlite", "duckdb"):
        from macsql.database.execution import statements_in_flight

        return statements_in_flight()
    if backend == "postgres":
        import psycopg

        from macsql.database.loaders.postgres import psycopg_url

        admin = psycopg_url(os.environ["MACSQL_PG_URL"])
        with psycopg.connect(admin.render_as_string(False).replace("+psycopg", "")) as conn:
            row = conn.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE usename = %s AND state = 'active' "
                "AND pid <> pg_backend_pid()",
                (_user_of(url),),
            ).fetchone()
        return int(row[0]) if row else 0
    import pymysql
    from sqlalchemy.engine import make_url

    admin = make_url(os.environ["MACSQL_MYSQL_URL"])
    conn = pymysql.connect(
        host=admin.host or "127.0.0.1",
        port=admin.port or 3306,
        user=admin.username or "",
        password=admin.password or "",
    )
    try:
        with conn.cursor() as cursor:
            cursor.execute(
                "SELECT count(*) FROM information_schema.processlist "
                "WHERE user = %s AND command <> 'Sleep'",
                (_user_of(url),),
            )
            (count,) = cursor.fetchone()
    finally:
        conn.close()
    return int(count)


# --- one corpus in this process --------------------------------------------------------------


def run_corpus(backend: str, url: str, timeout: float) -> dict[str, Any]:
    from macsql.database.connection import resolve_database
    from macsql.database.execution import execute_sql

    ref = resolve_database(url)
    execute_sql(ref, "SELECT 1")  # connect and read the inventory outside the measured calls
    rows = []
    for line, kind, note, sql in corpus(DATA / f"bombs_{backend}.sql"):
        started = time.monotonic()
        result = execute_sql(ref, sql, timeout=timeout, max_rows=None, max_bytes=BUDGET)
        elapsed = time.monotonic() - started
        rows.append(
            {
                "line": line,
                "expected": kind,
                "note": note,
                "outcome": result.outcome.value,
                "elapsed_s": round(elapsed, 3),
                "overrun_s": round(max(0.0, elapsed - timeout), 3),
            }
        )
    time.sleep(1.0)
    return {
        "backend": backend,
        "timeout_s": timeout,
        "entries": rows,
        "sessions_after_1s": sessions_still_running(backend, url),
        "peak_rss_mb": round(peak_mb(), 1),
    }


def target_url(backend: str, scratch: Path) -> str | None:
    """The concert_singer database on `backend`, or None when it is not set up here."""
    if backend == "sqlite":
        if not CONCERT.is_file():
            return None
        copy = scratch / "concert_singer.sqlite"
        shutil.copyfile(CONCERT, copy)
        return str(copy)
    if backend == "duckdb":
        if not CONCERT.is_file():
            return None
        from macsql.cli.main import main

        with open(os.devnull, "w") as quiet:
            saved, sys.stdout = sys.stdout, quiet
            try:
                main(["load", "--to", f"duckdb:///{scratch}", "--sqlite", str(CONCERT)])
            finally:
                sys.stdout = saved
        return f"duckdb:///{scratch}/concert_singer.duckdb"
    if backend == "postgres":
        reader = os.environ.get("MACSQL_PG_READER_URL")
        if not (reader and os.environ.get("MACSQL_PG_URL")):
            return None
        from macsql.database.loaders.postgres import database_url

        return database_url(reader, "concert_singer")
    reader = os.environ.get("MACSQL_MYSQL_READER_URL")
    if not (reader and os.environ.get("MACSQL_MYSQL_URL")):
        return None
    return reader.rstrip("/") + "/concert_singer"


# --- the model, and ask / eval end to end ------------------------------------------------------


def run_model(fault: str, timeout: float) -> dict[str, Any]:
    import langchain_openai  # noqa: F401  (imports are not part of the measured call)

    from macsql.llm.calls import call_model
    from macsql.llm.settings import ModelSettings
    from macsql.testing.scripted import ScriptedOpenAIServer, Silent, Trickle

    replies: dict[str, Any] = {"trickle": Trickle(interval=0.3), "silent": Silent(), "500": 500}
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
    return {
        "case": f"model_{fault}",
        "outcome": "failed" if reply.failed else "ok",
        "elapsed_s": round(elapsed, 3),
        "overrun_s": round(max(0.0, elapsed - timeout), 3),
        "peak_rss_mb": round(peak_mb(), 1),
    }


def run_command(args: list[str], bomb: str) -> dict[str, Any]:
    """`macsql <args>` in a child process whose scripted model always answers `bomb`: its
    time, exit status and the child's own peak RSS (from wait4)."""
    from macsql.testing.scripted import ScriptedOpenAIServer

    reply = f"```sql\n{bomb}\n```"
    with ScriptedOpenAIServer(lambda _prompt: reply) as server:
        command = [
            sys.executable,
            "-m",
            "macsql.cli.main",
            *args,
            "--model",
            "openai:scripted",
            "--base-url",
            server.base_url,
            "--api-key",
            "k",
        ]
        started = time.monotonic()
        child = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        _, status, usage = os.wait4(child.pid, 0)
        elapsed = time.monotonic() - started
        child.returncode = os.waitstatus_to_exitcode(status)
    return {
        "exit": child.returncode,
        "elapsed_s": round(elapsed, 3),
        "peak_rss_mb": round(usage.ru_maxrss / 1024, 1),
    }


def end_to_end(timeout: float, scratch: Path) -> list[dict[str, Any]]:
    if not CONCERT.is_file():
        return []
    cases = []
    sample = scratch / "spider"
    (sample / "database" / "concert_singer").mkdir(parents=True)
    shutil.copyfile(CONCERT, sample / "database" / "concert_singer" / "concert_singer.sqlite")
    questions = ["How many singers are there?", "List the stadiums.", "Who is the oldest?"]
    dev = [{"db_id": "concert_singer", "question": q, "query": "SELECT 1"} for q in questions]
    (sample / "dev.json").write_text(json.dumps(dev))
    (sample / "tables.json").write_text("[]")
    duck = target_url("duckdb", scratch)
    for name, db, bomb in (
        ("sqlite", str(CONCERT), SQLITE_BOMB),
        ("duckdb", duck, DUCKDB_BOMB),
    ):
        if db is None:
            continue
        ask = ["ask", "How many singers?", "--db", db, "--timeout", str(timeout)]
        cases.append({"case": f"ask_{name}_bomb", **run_command(ask, bomb)})
        db_url = [] if name == "sqlite" else ["--db-url", db.replace("concert_singer", "{db_id}")]
        evaluation = [
            "eval",
            "--dataset",
            "spider",
            "--data-dir",
            str(sample),
            "--processes",
            "1",
            "--timeout",
            str(timeout),
            "--set",
            f"query_timeout={timeout}",
            "--no-progress",
            "--out",
            str(scratch / f"eval-{name}"),
            *db_url,
        ]
        cases.append({"case": f"eval_{name}_bomb", **run_command(evaluation, bomb)})
    return cases


# --- the report --------------------------------------------------------------------------------


def child(args: list[str]) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, __file__, *args], capture_output=True, text=True, timeout=900
    )
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    if done.returncode != 0 or not lines:
        raise SystemExit(f"{args} failed:\n{done.stderr[-3000:]}")
    report: dict[str, Any] = json.loads(lines[-1])
    return report


def report_corpus(result: dict[str, Any]) -> bool:
    worst = max((e["overrun_s"] for e in result["entries"]), default=0.0)
    peak, sessions = result["peak_rss_mb"], result["sessions_after_1s"]
    print(
        f"{result['backend']} (tests/data/bombs_{result['backend']}.sql, "
        f"{len(result['entries'])} statements, timeout {result['timeout_s']:g} s, budget 64 MB):"
    )
    for e in result["entries"]:
        print(
            f"  L{e['line']:<3} took {e['elapsed_s']:6.2f}s  overrun {e['overrun_s']:5.2f}s  "
            f"{e['outcome']:<16} ({e['note'][:70]})"
        )
    ok = worst <= SLACK_S and peak < RSS_BOUND_MB and sessions == 0
    print(
        f"  => worst overrun {worst:.2f}s (target <= {SLACK_S}s), peak RSS {peak:.1f} MB over "
        f"the corpus (target < {RSS_BOUND_MB} MB), sessions running 1 s after: {sessions} "
        f"(target 0): {'within' if ok else 'OVER'}"
    )
    return ok


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    choices = ["sqlite", "duckdb", "postgres", "mysql", "model", "ask", "all"]
    parser.add_argument("--backend", choices=choices, default="all")
    parser.add_argument("--timeout", type=float, default=2.0, help="seconds per statement (2)")
    parser.add_argument("--corpus", help=argparse.SUPPRESS)  # internal: one corpus, as JSON
    parser.add_argument("--db", help=argparse.SUPPRESS)
    parser.add_argument("--model-fault", help=argparse.SUPPRESS)
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    if args.corpus:
        print(json.dumps(run_corpus(args.corpus, args.db, args.timeout)))
        return
    if args.model_fault:
        print(json.dumps(run_model(args.model_fault, args.timeout)))
        return
    wanted = choices[:-1] if args.backend == "all" else [args.backend]
    within = True
    with tempfile.TemporaryDirectory(prefix="macsql-bench-bounds-") as folder:
        scratch = Path(folder)
        for backend in (b for b in wanted if b in ("sqlite", "duckdb", "postgres", "mysql")):
            (scratch / backend).mkdir()
            url = target_url(backend, scratch / backend)
            if url is None:
                print(f"{backend}: skipped (its server or data is not set up; see the docstring)")
                continue
            result = child(["--corpus", backend, "--db", url, "--timeout", str(args.timeout)])
            within = report_corpus(result) and within
        runs: list[tuple[str, Callable[[], list[dict[str, Any]]]]] = []
        if "model" in wanted:
            runs.append(
                (
                    "model (the model's faults, timeout 1 s)",
                    lambda: [
                        child(["--model-fault", f, "--timeout", "1"])
                        for f in ("trickle", "silent", "500")
                    ],
                )
            )
        if "ask" in wanted:
            (scratch / "e2e").mkdir()
            runs.append(
                (
                    f"ask and eval (a scripted model answering a bomb, timeout {args.timeout:g} s)",
                    lambda: end_to_end(args.timeout, scratch / "e2e"),
                )
            )
        for title, run in runs:
            cases = run()
            print(f"{title}:")
            for case in cases:
                extra = f"overrun {case['overrun_s']:5.2f}s  " if "overrun_s" in case else ""
                status = case.get("outcome", f"exit {case.get('exit')}")
                print(
                    f"  {case['case']:<18} took {case['elapsed_s']:6.2f}s  {extra}"
                    f"peak RSS {case['peak_rss_mb']:7.1f} MB  {status}"
                )
            worst = max((c.get("overrun_s", 0.0) for c in cases), default=0.0)
            peak = max((c["peak_rss_mb"] for c in cases), default=0.0)
            ok = worst <= SLACK_S and peak < RSS_BOUND_MB
            within = within and ok
            print(
                f"  => worst overrun {worst:.2f}s, peak RSS {peak:.1f} MB: "
                f"{'within' if ok else 'OVER'}"
            )
    sys.exit(0 if within else 1)


if __name__ == "__main__":
    main()
