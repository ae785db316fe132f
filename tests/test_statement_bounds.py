"""Bound the statement before the server sees it (issue 26): size limits, work a backend cannot
interrupt, catalog side doors; the guard linear in the statement and inside the call's
deadline."""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from typing import Any
from unittest import mock

import pytest
from conftest import concert_db
from timing import generous

from macsql.core.context import Context
from macsql.database import guard_relations, relation_inventory
from macsql.database.connection import DatabaseRef, resolve_database
from macsql.database.execution import Outcome, execute_sql
from macsql.database.guard import GuardKind, check_statement, make_policy
from macsql.database.guard_costs import backtracking_problem
from macsql.database.guard_limits import StatementLimits, statement_limits

DIALECTS = ["sqlite", "postgres", "mysql", "duckdb"]


def cte_chain(count: int) -> str:
    ctes = ["c0 AS (SELECT 1 AS x)"] + [
        f"c{i} AS (SELECT x FROM c{i - 1})" for i in range(1, count)
    ]
    return "WITH " + ", ".join(ctes) + f" SELECT x FROM c{count - 1}"


@pytest.mark.parametrize("dialect", DIALECTS)
def test_each_limit_refuses_just_above_and_allows_at_it(dialect: str) -> None:
    limits = StatementLimits()
    cases: list[tuple[Callable[[int], str], int]] = [
        (cte_chain, limits.max_ctes),
        (lambda n: "SELECT " + "(" * n + "1" + ")" * n, limits.max_depth),
        (
            lambda n: "SELECT 1 WHERE 1 IN (" + ", ".join(map(str, range(n))) + ")",
            limits.max_in_list,
        ),
        (
            lambda n: " UNION ALL ".join(f"SELECT {i}" for i in range(n)),
            limits.max_query_blocks,
        ),
        (lambda n: "SELECT 'x' LIKE '" + "a" * n + "'", limits.max_pattern_chars),
        (lambda n: "SELECT '" + "x" * (n - 14) + "' AS v", limits.max_chars),
    ]
    for build, limit in cases:
        at, over = build(limit), build(limit + 1)
        assert check_statement(at, dialect).allowed, (dialect, at[:80])
        refused = check_statement(over, dialect)
        assert not refused.allowed, (dialect, over[:80])
        assert refused.kind in (GuardKind.TOO_COMPLEX, GuardKind.TOO_LONG, GuardKind.UNSTOPPABLE)
        assert "limit" in (refused.reason or "")


def test_context_fields_set_the_limits() -> None:
    context = Context(max_ctes=2, max_in_list=3, max_result_bytes=1 << 20)
    limits = statement_limits(context)
    assert (limits.max_ctes, limits.max_in_list, limits.max_built_bytes) == (2, 3, 1 << 20)
    policy = make_policy(limits=limits)
    assert not check_statement(cte_chain(3), "sqlite", policy).allowed
    assert check_statement(cte_chain(2), "sqlite", policy).allowed
    assert not check_statement("SELECT 1 IN (1, 2, 3, 4)", "sqlite", policy).allowed
    assert not check_statement("SELECT repeat('x', 2000000)", "postgres", policy).allowed


def test_relations_are_resolved_in_time_linear_in_the_statement() -> None:
    # Each table reference used to scan every WITH it sits under: quadratic in a CTE chain.
    calls = {"n": 0}
    real = guard_relations._cte_key

    def counted(*args: Any) -> str:
        calls["n"] += 1
        return real(*args)

    wide = StatementLimits(max_ctes=10_000, max_query_blocks=10_000, max_nodes=100_000)
    policy = make_policy(limits=wide)
    counts = []
    for size in (200, 400):
        calls["n"] = 0
        with mock.patch.object(guard_relations, "_cte_key", counted):
            assert check_statement(cte_chain(size), "sqlite", policy).allowed
        counts.append(calls["n"])
    assert counts[1] <= 2.2 * counts[0], counts  # linear: twice the CTEs, twice the work


# --- work a backend cannot interrupt ---------------------------------------------------------

UNSTOPPABLE = [
    ("sqlite", "SELECT printf('%.*c', 2000000000, 'x')"),
    ("sqlite", "SELECT length(printf('%2000000000c', 'x'))"),
    ("sqlite", "SELECT printf(name, 2000000000, 'x') FROM singer"),
    ("sqlite", "SELECT printf('%.*c', age * 100000000, 'x') FROM singer"),
    ("postgres", "SELECT md5(repeat('x', 1000000000))"),
    ("postgres", "SELECT repeat(repeat('x', 1000000), 2000)"),
    ("postgres", "SELECT lpad('x', 1000000000)"),
    ("postgres", "SELECT format('%1000000000s', 'x')"),
    ("postgres", "SELECT array_fill(1, ARRAY[1000000000])"),
    ("postgres", "SELECT repeat('y', 40000000 + g) FROM generate_series(1, 100) g"),
    ("mysql", "SELECT REGEXP_REPLACE(REPEAT('ab', 8000000), '(a|ab)(c|bcd)*(d*)', 'x')"),
    ("mysql", "SELECT name REGEXP '(a|ab)*c' FROM singer"),
    ("mysql", "SELECT name REGEXP '(x+)+y' FROM singer"),
    ("mysql", "SELECT name REGEXP '(a)\\\\1' FROM singer"),
    ("mysql", "SELECT REGEXP_REPLACE(REPEAT('a', 16000000), 'a*[bc]', 'x')"),
    ("mysql", "SELECT CONCAT(name, name) RLIKE 'a*b' FROM singer"),
    ("mysql", "SELECT name REGEXP country FROM singer"),
    ("duckdb", "SELECT damerau_levenshtein(repeat('ab', 15000), repeat('ba', 15000))"),
    ("duckdb", "SELECT levenshtein(a.name, b.name) FROM singer a, singer b"),
    ("duckdb", "SELECT range(100000000)"),
    ("duckdb", "SELECT repeat('x', 1000000000)"),
]


@pytest.mark.parametrize(("dialect", "sql"), UNSTOPPABLE)
def test_uninterruptible_work_is_refused_up_front(dialect: str, sql: str) -> None:
    verdict = check_statement(sql, dialect)
    assert not verdict.allowed and verdict.kind == GuardKind.UNSTOPPABLE, verdict


BOUNDED = [
    ("sqlite", "SELECT printf('%.2f', age) FROM singer"),
    ("sqlite", "SELECT printf('%5d|%-10s', age, name) FROM singer"),
    ("postgres", "SELECT lpad(name, 10, '0'), repeat('-', 3) FROM singer"),
    ("postgres", "SELECT name FROM singer WHERE name ~ '^(Jo|Ti)m+'"),
    ("mysql", "SELECT name FROM singer WHERE name REGEXP '^J[a-z]+' AND country RLIKE 'an'"),
    ("mysql", "SELECT REGEXP_REPLACE(LOWER(name), '[aeiou]+', '') FROM singer"),
    ("duckdb", "SELECT levenshtein(name, 'Joe Sharp') FROM singer"),
    ("duckdb", "SELECT i FROM range(1000000) t(i)"),
    ("duckdb", "SELECT range(10)"),
]


@pytest.mark.parametrize(("dialect", "sql"), BOUNDED)
def test_bounded_uses_of_the_same_functions_stay_allowed(dialect: str, sql: str) -> None:
    assert check_statement(sql, dialect).allowed, check_statement(sql, dialect).reason


def test_generated_builder_sizes_are_refused_exactly_above_the_budget() -> None:
    rng = random.Random(26)
    budget = StatementLimits().max_built_bytes
    for _ in range(300):
        unit = rng.randint(1, 9)
        times = rng.randint(1, 3 * budget // unit)
        sql = f"SELECT repeat('{'x' * unit}', {times})"
        verdict = check_statement(sql, "postgres")
        assert verdict.allowed == (unit * times <= budget), (sql, verdict.reason)


def test_quantified_groups_and_back_references_are_found_in_generated_patterns() -> None:
    rng = random.Random(26)
    atoms = ["a", "b", "[a-z]", "\\\\d", ".", "[)]", "\\\\(", "x?"]
    for _ in range(500):
        plain = "".join(rng.choice(atoms) + rng.choice(["", "*", "+", "{2}"]) for _ in range(6))
        assert backtracking_problem(plain) is None, plain
        group = f"({rng.choice(atoms)}|{rng.choice(atoms)})"
        assert backtracking_problem(plain + group + rng.choice("*+{")) == "a quantified group"
        assert backtracking_problem(plain + group + "\\1") == "a back-reference"


# --- catalog side doors --------------------------------------------------------------------

CATALOG_DOORS = [
    ("postgres", "SELECT 'pg_authid'::regclass"),
    ("postgres", "SELECT CAST(10 AS regrole)"),
    ("postgres", "SELECT i::regclass::text FROM generate_series(1, 20000) i"),
    ("postgres", "SELECT 1::regprocedure, 1::regnamespace, 1::regtype, 1::regproc"),
    ("mysql", "SELECT @@datadir"),
    ("mysql", "SELECT @@GLOBAL.hostname, @@secure_file_priv"),
    ("mysql", "SELECT @@session.sql_mode"),
    ("mysql", "SELECT @a := name FROM singer"),
    ("mysql", "SELECT @x"),
]


@pytest.mark.parametrize(("dialect", "sql"), CATALOG_DOORS)
def test_casts_to_catalog_types_and_server_variables_are_refused(dialect: str, sql: str) -> None:
    verdict = check_statement(sql, dialect)
    assert not verdict.allowed
    assert verdict.kind in (GuardKind.FORBIDDEN_RELATION, GuardKind.SESSION), verdict


INFORMATION = (
    "SELECT table_schema, table_name FROM information_schema.tables",
    "SELECT DISTINCT table_schema FROM information_schema.columns",
    "SELECT schema_name FROM information_schema.schemata",
)


@pytest.mark.postgres
def test_postgres_information_views_show_the_users_schemas_only(
    pg_spider: Callable[[str], DatabaseRef],
) -> None:
    ref = pg_spider("concert_singer")
    for sql in INFORMATION:
        result = execute_sql(ref, sql, max_rows=None)
        assert result.outcome == Outcome.OK, result.error
        assert result.rows and {row[0] for row in result.rows} == {"public"}, (sql, result.rows)


@pytest.mark.slow
def test_mariadb_information_views_show_this_database_only(
    mysql_spider: Callable[[str], DatabaseRef],
) -> None:
    ref = mysql_spider("concert_singer")
    for sql in INFORMATION:
        result = execute_sql(ref, sql, max_rows=None)
        assert result.outcome == Outcome.OK, result.error
        assert result.rows and {row[0] for row in result.rows} == {"concert_singer"}, result.rows
    for sql in ("SELECT @@datadir", "SELECT * FROM mysql.user", "SELECT * FROM mysql.global_priv"):
        assert execute_sql(ref, sql).outcome == Outcome.REJECTED, sql


def test_sqlite_information_views_are_its_own_schema() -> None:
    ref = resolve_database(str(concert_db()))
    result = execute_sql(ref, "SELECT name FROM sqlite_schema WHERE type = 'table'")
    assert result.outcome == Outcome.OK and {"singer", "concert"} <= {r[0] for r in result.rows}


# --- the guard inside the call's deadline ----------------------------------------------------


def test_the_caller_gets_control_back_even_while_the_guard_works() -> None:
    ref = resolve_database(str(concert_db()))
    execute_sql(ref, "SELECT 1")
    real = relation_inventory.guard_verdict

    def slow(*args: Any, **kwargs: Any) -> Any:
        time.sleep(3)  # a parse that takes its time, or an inventory read from a slow server
        return real(*args, **kwargs)

    with mock.patch.object(relation_inventory, "guard_verdict", slow):
        started = time.monotonic()
        result = execute_sql(ref, "SELECT count(*) FROM singer", timeout=0.5)
        elapsed = time.monotonic() - started
    assert result.outcome == Outcome.TIMEOUT, result
    assert elapsed < generous(0.5 + 0.5), elapsed
