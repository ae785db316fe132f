"""Benchmark: the statement guard's cost per statement (parse plus checks).

Run: python benchmarks/bench_guard.py [--rounds 5]

Times `check_statement` on every Spider dev gold query that has a database (972), in the SQLite
and PostgreSQL dialects. "cold" clears the guard's caches (the verdict per SQL text, the parse,
and the verdict per function name) before every statement, so nothing is reused; "warm" keeps
them, as when the scorer checks a prediction that the executor has checked already. The split
line times sqlglot's tokenizer and parser alone, to show what the checks add (an allowed
statement is parsed twice: the model's text, then the text the guard writes back from it,
which is what runs). The hostile corpora are timed too. "with inventory" is the guard as the
executor runs it on SQLite: with the relation allow-list of each query's own database (read
once per database, not timed). The target was a median under 1 ms; writing the statement back
and reading it again (issue 26) costs about five parses (benchmarks/README.md).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import sqlglot
from sqlglot.dialects.dialect import Dialect

from macsql.database.connection import resolve_database
from macsql.database.guard import (
    _cached_verdict,
    _typed_refusal,
    check_statement,
    forbidden_function_reason,
    make_policy,
)
from macsql.database.relation_inventory import relations_of

ROOT = Path(__file__).resolve().parents[1]
SPIDER = Path(os.environ.get("MACSQL_DATA_DIR", ROOT.parent / "shared" / "data")) / "spider"
CORPORA = {
    "sqlite": ROOT / "tests/data/hostile_sqlite.sql",
    "postgres": ROOT / "tests/data/hostile_postgres.sql",
}
MISSING = {"wta_1", "baseball_1", "soccer_1"}


def gold_items() -> list[dict[str, str]]:
    items = json.loads((SPIDER / "dev.json").read_text(encoding="utf-8"))
    return [item for item in items if item["db_id"] not in MISSING]


def gold_queries() -> list[str]:
    return [item["query"] for item in gold_items()]


def corpus(path: Path) -> list[str]:
    entries: list[list[str]] = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if re.match(r"^-- @@ \w+ \| ", line):
            entries.append([])
        elif entries:
            entries[-1].append(line)
    return ["\n".join(lines).strip("\n") for lines in entries]


def time_each(
    statements: list[str],
    run: Callable[[str], object],
    rounds: int,
    before: Callable[[], None] | None = None,
) -> list[float]:
    samples: list[float] = []
    for _ in range(rounds):
        for sql in statements:
            if before is not None:
                before()
            started = time.perf_counter()
            run(sql)
            samples.append(time.perf_counter() - started)
    return samples


def row(label: str, samples: list[float]) -> str:
    ordered = sorted(samples)
    p99 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]
    return (
        f"  {label:<28} median {statistics.median(ordered) * 1e3:6.3f} ms   "
        f"p99 {p99 * 1e3:6.3f} ms   max {ordered[-1] * 1e3:7.3f} ms   "
        f"n={len(ordered)}"
    )


def _clear_caches() -> None:
    forbidden_function_reason.cache_clear()
    _typed_refusal.cache_clear()
    _cached_verdict.cache_clear()


def with_inventory(rounds: int) -> list[float]:
    items = gold_items()
    policies = {}
    for item in items:
        if item["db_id"] not in policies:
            path = SPIDER / "database" / item["db_id"] / f"{item['db_id']}.sqlite"
            policies[item["db_id"]] = make_policy(relations_of(resolve_database(str(path))))
    samples: list[float] = []
    for _ in range(rounds):
        for item in items:
            _clear_caches()
            started = time.perf_counter()
            verdict = check_statement(item["query"], "sqlite", policies[item["db_id"]])
            samples.append(time.perf_counter() - started)
            assert verdict.allowed, (item["query"], verdict.reason)
    return samples


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5, help="passes over the queries")
    args = parser.parse_args(argv)
    queries = gold_queries()
    for sql in queries[:50]:  # import and first-call costs out of the way
        check_statement(sql, "sqlite")
    print(
        f"Guard cost per statement: {len(queries)} Spider dev gold queries x {args.rounds} "
        f"rounds (sqlglot {sqlglot.__version__}, Python {platform.python_version()}, "
        f"{platform.machine()})"
    )
    for dialect in ("sqlite", "postgres"):
        cold = time_each(
            queries,
            lambda s, d=dialect: check_statement(s, d),
            args.rounds,
            before=_clear_caches,
        )
        warm = time_each(queries, lambda s, d=dialect: check_statement(s, d), args.rounds)
        dialect_obj = Dialect.get_or_raise(dialect)
        parse_only = time_each(
            queries,
            lambda s, d=dialect_obj: d.parser().parse(d.tokenize(s), s),
            args.rounds,
        )
        refused = [s for s in queries if not check_statement(s, dialect).allowed]
        print(f"{dialect}: {len(queries) - len(refused)} of {len(queries)} allowed")
        print(row("guard, cold (no cache)", cold))
        if dialect == "sqlite":
            print(row("guard with inventory, cold", with_inventory(args.rounds)))
        print(row("guard, warm", warm))
        print(row("sqlglot tokenize+parse only", parse_only))
        hostile = corpus(CORPORA[dialect])
        hostile_times = time_each(
            hostile,
            lambda s, d=dialect: check_statement(s, d),
            args.rounds,
            before=_clear_caches,
        )
        allowed = sum(check_statement(s, dialect).allowed for s in hostile)
        print(f"  hostile corpus: {len(hostile)} statements, {allowed} allowed")
        print(row("guard on hostile, cold", hostile_times))
    return 0


if __name__ == "__main__":
    sys.exit(main())
