"""Benchmark: CPU per SQL statement through `execute_sql`, and per guard verdict.

Run: python benchmarks/bench_statement_path.py [--limit 100] [--rounds 15]

On the gold queries of the first `--limit` Spider dev questions that have a database, in one
process, medians over `--rounds` rounds of CPU per statement (both threads: the caller's and the
statement worker's):

- `execute_sql, texts run before`: the guard's verdict cached, and SQLite has run each text on
  its connection before (an eval's scorer runs the prediction the executor ran);
- `execute_sql, new connections`: the same, with every connection opened anew before the round
  (nothing prepared on it yet, SQLite's page cache empty);
- `sqlite3 alone`: `cursor.execute` and `fetchall` of the guard's text on a plain connection;
- `guard verdict, new text`: `check_statement` with the database's inventory, its caches
  emptied before each round (a model's new query).

The machine's load average is printed with the figures: on a shared machine, compare CPU.
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_eval_concurrency import SPIDER


def main() -> None:
    from macsql.database import guard
    from macsql.database.connection import dispose_all, resolve_database
    from macsql.database.execution import execute_sql
    from macsql.database.relation_inventory import guard_verdict, relations_of

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limit", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=15)
    args = parser.parse_args()
    dev = json.loads((SPIDER / "dev.json").read_text(encoding="utf-8"))
    paths = [SPIDER / "database" / d["db_id"] / f"{d['db_id']}.sqlite" for d in dev]
    items = [(d, p) for d, p in zip(dev, paths, strict=True) if p.is_file()][: args.limit]
    refs = {str(p): resolve_database(str(p)) for _, p in items}
    runs = [(refs[str(p)], d["query"]) for d, p in items]
    for ref, sql in runs:
        result = execute_sql(ref, sql)
        assert result.outcome.ran, (sql, result.error)
    plain = {key: sqlite3.connect(f"file:{key}?mode=ro", uri=True) for key in refs}
    texts = [(plain[str(p)], guard_verdict(refs[str(p)], d["query"]).sql or "") for d, p in items]
    policies = [(sql, guard.make_policy(relations_of(ref))) for ref, sql in runs]

    def statements() -> None:
        for ref, sql in runs:
            execute_sql(ref, sql)

    def new_connections() -> float:
        dispose_all()
        for ref in refs.values():
            execute_sql(ref, "SELECT 1")
        return timed(statements)

    def sqlite_alone() -> None:
        for conn, sql in texts:
            conn.execute(sql).fetchall()

    def verdicts() -> float:
        guard._cached_verdict.cache_clear()
        return timed(lambda: [guard.check_statement(s, "sqlite", p) for s, p in policies])

    cases: dict[str, Callable[[], float]] = {
        "execute_sql, texts run before": lambda: timed(statements),
        "execute_sql, new connections": new_connections,
        "sqlite3 alone": lambda: timed(sqlite_alone),
        "guard verdict, new text": verdicts,
    }
    figures: dict[str, list[float]] = {name: [] for name in cases}
    for _ in range(args.rounds):
        for name, case in cases.items():
            figures[name].append(1000 * case() / len(runs))
    one, five, _ = os.getloadavg()
    print(
        f"{len(runs)} Spider dev gold queries, {args.rounds} rounds; CPU ms per statement, "
        f"median (min-max); load average {one:.2f} (1 min), {five:.2f} (5 min) on "
        f"{os.cpu_count()} cores"
    )
    for name, values in figures.items():
        print(f"{name:<34}{statistics.median(values):>8.4f} ({min(values):.4f}-{max(values):.4f})")


def timed(work: Callable[[], object]) -> float:
    started = time.process_time()
    work()
    return time.process_time() - started


if __name__ == "__main__":
    main()
