"""A search in a value the query grows is refused before it runs (SQLite; MySQL's regular
expressions).

LIKE, GLOB, instr() and replace() compare their pattern at every position of their subject, in
one step SQLite does not interrupt: a recursive CTE that doubles a string, or a group_concat(),
makes either side megabytes, and the caller returned at its deadline while the step ran on for
minutes. The guard now traces each side of a search through CTEs, subqueries and projection
aliases to stored columns and constants (`guard_costs._data_sized`)."""

from __future__ import annotations

import random
import time
from collections.abc import Callable

import pytest
from conftest import concert_db
from pg_support import writable_engine
from sqlalchemy import text
from timing import generous

from macsql.database.connection import DatabaseRef, get_engine, resolve_database
from macsql.database.execution import Outcome, execute_sql, statements_in_flight
from macsql.database.guard import GuardKind, check_statement

DOUBLED = (
    "WITH RECURSIVE r(s, n) AS (SELECT 'a', 0 UNION ALL SELECT s || s, n + 1 FROM r WHERE n < {n}) "
)

# Values a query grows: (prelude, FROM clause, the grown expression).
GROWN = [
    (DOUBLED.format(n=22), "FROM r WHERE n = 22", "s"),
    (DOUBLED.format(n=22) + ", q AS (SELECT * FROM r) ", "FROM q", "s"),
    (DOUBLED.format(n=22) + ", q AS (SELECT s AS v FROM r) ", "FROM q", "q.v"),
    ("", "FROM (SELECT group_concat(name, '') AS g FROM singer, concert)", "g"),
    ("WITH a AS (SELECT group_concat(name) AS g FROM singer) ", "FROM a", "a.g"),
    ("", "FROM singer", "group_concat(name) OVER ()"),
    ("", "FROM singer", "(SELECT group_concat(name) FROM singer)"),
    ("", "FROM singer", "replace(name, 'a', name)"),
    ("", "FROM singer", "hex(hex(hex(hex(hex(name)))))"),  # each hex() doubles the value
    ("", "FROM singer", "printf('%.*c', 1000000, name)"),  # a width the query names
    ("", "FROM singer", "printf('" + "%s" * 20 + "', " + ", ".join(["name"] * 20) + ")"),
    (
        "WITH c0 AS (SELECT name AS v FROM singer), "
        + ", ".join(f"c{i} AS (SELECT v || v AS v FROM c{i - 1})" for i in range(1, 6))
        + " ",
        "FROM c5",
        "v",
    ),
]
SEARCHES = [
    "instr({x}, {p})",
    "{x} LIKE {p}",
    "{x} GLOB {p}",
    "replace({x}, {p}, '')",
    "like({p}, {x})",
    "length(replace({x}, {p}, 'c'))",
]
STORED = [("", "FROM singer", "name"), ("WITH c AS (SELECT name FROM singer) ", "FROM c", "name")]


def generated(rng: random.Random, count: int) -> list[str]:
    """Searches with the grown value as subject, as pattern, or both."""
    statements = []
    for _ in range(count):
        prelude, source, grown = rng.choice(GROWN)
        _, _, stored = rng.choice(STORED[:1])
        constant = "'" + "a" * rng.randint(1, 190) + "b'"
        x, p = rng.choice([(grown, constant), (grown, stored), (stored, grown), (grown, grown)])
        search = rng.choice(SEARCHES).format(x=x, p=p)
        statements.append(f"{prelude}SELECT {search} {source}")
    return statements


@pytest.mark.parametrize("sql", generated(random.Random(36), 60))
def test_a_search_in_a_grown_value_is_refused(sql: str) -> None:
    verdict = check_statement(sql, "sqlite")
    assert not verdict.allowed and verdict.kind == GuardKind.UNSTOPPABLE, (sql, verdict)
    assert "a value the query grows" in (verdict.reason or "")


@pytest.mark.parametrize(
    "sql",
    [
        # in a join's ON condition, from a subquery in FROM
        "SELECT 1 FROM singer a JOIN (SELECT group_concat(name) AS g FROM singer) b "
        "ON instr(b.g, a.name)",
        # a correlated subquery naming an outer derived table's column
        "SELECT (SELECT 1 FROM singer WHERE name LIKE g) "
        "FROM (SELECT group_concat(name) AS g FROM singer)",
        # a set operation's later branch, read by position
        "SELECT instr(x, 'a') FROM (SELECT name AS x FROM singer "
        "UNION ALL SELECT group_concat(name) FROM singer)",
        # a column named by its expression's text
        "WITH q AS (SELECT group_concat(name) FROM singer) "
        "SELECT instr(\"group_concat(name)\", 'x') FROM q",
        # a projection alias in ORDER BY, HAVING
        "SELECT group_concat(name) AS g FROM singer ORDER BY instr(g, 'x')",
        "SELECT group_concat(name) AS g FROM singer GROUP BY country HAVING g LIKE '%a'",
    ],
)
def test_a_grown_value_reached_by_name_is_refused(sql: str) -> None:
    verdict = check_statement(sql, "sqlite")
    assert not verdict.allowed and verdict.kind == GuardKind.UNSTOPPABLE, (sql, verdict)


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT name FROM singer WHERE name LIKE '%a%'",
        "SELECT 1 FROM singer a JOIN (SELECT name AS g FROM singer) b ON instr(b.g, a.name)",
        "SELECT a.name FROM singer a JOIN concert b "
        "ON a.name || ' ' || b.theme LIKE '%' || b.theme || '%'",
        "SELECT instr(replace(name, ',', ''), ' ') FROM singer",
        "WITH c AS (SELECT name AS v FROM singer) SELECT v FROM c WHERE v GLOB 'J*'",
        "SELECT x FROM (SELECT name AS x FROM singer) WHERE instr(x, 'o') > 0",
        DOUBLED.format(n=5) + "SELECT n FROM r WHERE n LIKE '%1'",
        "SELECT name AS g FROM singer ORDER BY instr(g, 'o')",
        "SELECT max(name) LIKE 'J%', CASE WHEN age > 30 THEN name ELSE country END LIKE 'x' "
        "FROM singer",
        "WITH c0 AS (SELECT name AS v FROM singer), c1 AS (SELECT v || v AS v FROM c0) "
        "SELECT v FROM c1 WHERE v LIKE '%x'",
        # scalar functions of stored data, and a scalar subquery reading it
        "SELECT name FROM singer WHERE strftime('%Y', song_release_year) LIKE '20%'",
        "SELECT name FROM singer WHERE date(song_release_year) LIKE '2014-%'",
        "SELECT name FROM singer WHERE instr(hex(name), '4A') > 0",
        "SELECT name FROM singer WHERE name LIKE (SELECT max(country) FROM singer)",
        "SELECT (SELECT name FROM singer AS s WHERE s.singer_id = t.singer_id) LIKE 'J%' "
        "FROM singer AS t",
        # a formatter adding a little to a few values
        "SELECT replace(printf('%05d', singer_id), '0', '') FROM singer",
        "SELECT name FROM singer WHERE printf('%s (%s)', name, country) LIKE '%Jo%'",
    ],
)
def test_a_search_in_stored_data_is_allowed(sql: str) -> None:
    verdict = check_statement(sql, "sqlite")
    assert verdict.allowed, (sql, verdict)


def test_mysql_regex_on_a_recursive_cte_column_is_refused() -> None:
    grown = (
        "WITH RECURSIVE r(s, n) AS (SELECT 'a', 0 UNION ALL SELECT CONCAT(s, s), n + 1 FROM r "
        "WHERE n < 24) SELECT s REGEXP 'a*[bc]' FROM r"
    )
    verdict = check_statement(grown, "mysql")
    assert not verdict.allowed and verdict.kind == GuardKind.UNSTOPPABLE, verdict
    assert check_statement("SELECT name REGEXP 'a*[bc]' FROM singer", "mysql").allowed


def test_tracing_a_long_chain_of_ctes_stays_cheap() -> None:
    ctes = ["c0 AS (SELECT name AS v FROM singer)"] + [
        f"c{i} AS (SELECT v || v || v AS v FROM c{i - 1})" for i in range(1, 16)
    ]
    sql = "WITH " + ", ".join(ctes) + " SELECT v FROM c15 WHERE v LIKE '%x'"
    started = time.process_time()
    verdict = check_statement(sql, "sqlite")
    assert time.process_time() - started < generous(0.5)
    assert not verdict.allowed and verdict.kind == GuardKind.UNSTOPPABLE


def test_the_search_is_refused_and_nothing_keeps_running() -> None:
    """The attack that ran past its caller: now a clear refusal, at once."""
    db = resolve_database(str(concert_db()))
    sql = (
        DOUBLED.format(n=20)
        + "SELECT instr(s, substr(s, 1, length(s) / 2) || 'b') FROM r WHERE n = 20"
    )
    started = time.monotonic()
    result = execute_sql(db, sql, timeout=0.5)
    assert result.outcome == Outcome.REJECTED, result
    assert "a value the query grows" in (result.error or "")
    assert time.monotonic() - started < generous(0.5)
    assert statements_in_flight() == 0
    get_engine(db).dispose()


PG_DOUBLED = (
    "WITH RECURSIVE r(s, n) AS (SELECT 'a'::text, 0 UNION ALL SELECT s || s, n + 1 FROM r "
    "WHERE n < {n}) "
)


@pytest.mark.parametrize(
    "sql",
    [
        PG_DOUBLED.format(n=26) + "SELECT s LIKE '%" + "a" * 190 + "b' FROM r WHERE n = 26",
        PG_DOUBLED.format(n=24) + "SELECT s ILIKE '%' || substr(s, 1, 40000) FROM r",
        "SELECT g LIKE '%a' FROM (SELECT string_agg(name, '') AS g FROM singer) x",
    ],
)
def test_postgres_like_in_a_grown_value_is_refused(sql: str) -> None:
    verdict = check_statement(sql, "postgres")
    assert not verdict.allowed and verdict.kind == GuardKind.UNSTOPPABLE, (sql, verdict)


@pytest.mark.postgres
def test_postgres_like_in_a_grown_value_leaves_no_session_running(
    pg_spider: Callable[[str], DatabaseRef], pg_admin_url: str
) -> None:
    ref = pg_spider("concert_singer")
    admin = writable_engine(pg_admin_url)
    try:
        with admin.connect() as conn:
            started = conn.execute(text("SELECT clock_timestamp()")).scalar()
        sql = (
            PG_DOUBLED.format(n=24)
            + "SELECT s LIKE '%' || substr(s, 1, 40000) || 'b' FROM r WHERE n = 24"
        )
        result = execute_sql(ref, sql, timeout=0.5)
        assert result.outcome == Outcome.REJECTED, result
        time.sleep(1.0)  # the rule: no session of macsql's still runs a second later
        with admin.connect() as conn:
            active = conn.execute(
                text(
                    "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'macsql' "
                    "AND state = 'active' AND query_start >= :started"
                ),
                {"started": started},
            ).scalar()
    finally:
        admin.dispose()
    assert active == 0
