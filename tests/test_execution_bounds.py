"""Layers 2 and 3: read-only at the engine, a timeout that really stops, a row cap that holds.

Each test runs on SQLite and, when `MACSQL_PG_URL` names a server, on PostgreSQL (see
`tests/pg_support.py` for the skip/fail rule).
"""

from __future__ import annotations

import gc
import hashlib
import os
import shutil
import time
import tracemalloc
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from unittest import mock

import pytest
from conftest import concert_db, world_db
from pg_support import pg_checksum
from timing import generous

from macsql.database import execution, relation_inventory
from macsql.database.connection import (
    DatabaseRef,
    get_engine,
    resolve_database,
    statement_engine,
)
from macsql.database.execution import ExecutionResult, Outcome, execute_sql
from macsql.database.guard import GuardVerdict

ALLOW_ALL = GuardVerdict(True, "ok")  # patched in to bypass the guard

TIMEOUT = 1.0
SLACK = 0.5  # the bound: stopped within timeout + 0.5 s
ENGINES = ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)]

ENDLESS_CTE = (
    "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c"
)
CROSS_JOIN = "SELECT count(*) FROM city AS a, city AS b, city AS c"  # 4079^3 rows
# Rows keep coming, slowly, for ever: many fetches, each one quick.
SLOW_STREAM = (
    "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) "
    "SELECT x FROM c WHERE x % 1000 = 0"
)
HUGE = (
    "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT x FROM c LIMIT 10000000"
)


@dataclass
class Target:
    """A Spider database on one engine, and how to checksum it."""

    engine: str
    concert: DatabaseRef
    world: DatabaseRef
    checksum: Callable[[], str]


@pytest.fixture(scope="module")
def sqlite_copy(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    path = tmp_path_factory.mktemp("bounds") / "concert_singer.sqlite"
    shutil.copyfile(concert_db(), path)
    path.chmod(0o644)  # writable on disk: only macsql's layers may stop a write
    yield path
    get_engine(resolve_database(str(path))).dispose()


@pytest.fixture(params=ENGINES)
def target(request: pytest.FixtureRequest, sqlite_copy: Path) -> Target:
    if request.param == "sqlite":
        return Target(
            "sqlite",
            resolve_database(str(sqlite_copy)),
            resolve_database(str(world_db())),
            lambda: hashlib.sha256(sqlite_copy.read_bytes()).hexdigest(),
        )
    pg_spider = request.getfixturevalue("pg_spider")
    concert = pg_spider("concert_singer")
    return Target("postgres", concert, pg_spider("world_1"), lambda: pg_checksum(concert))


def timed(ref: DatabaseRef, sql: str, **kwargs: Any) -> tuple[ExecutionResult, float]:
    started = time.monotonic()
    result = execute_sql(ref, sql, **kwargs)
    return result, time.monotonic() - started


def assert_usable(ref: DatabaseRef, table: str, expected: int) -> None:
    after = execute_sql(ref, f"SELECT count(*) FROM {table}")
    assert after.outcome == Outcome.OK, after.error
    assert after.rows == [(expected,)]
    assert statement_engine(ref).pool.checkedout() == 0  # nothing leaked


# --- layer 2: read-only at the engine --------------------------------------------------------

SLIPPED_WRITES = [
    "INSERT INTO singer (Singer_ID, Name) VALUES (100, 'intruder')",
    "UPDATE singer SET Name = 'pwned'",
    "DELETE FROM singer",
    "DROP TABLE singer_in_concert",
    "CREATE TABLE evil (x int)",
    "CREATE TEMP TABLE evil (x int)",
    "ALTER TABLE singer ADD COLUMN evil TEXT",
    "WITH d AS (DELETE FROM singer RETURNING *) SELECT * FROM d",
    "SELECT * INTO evil FROM singer",
]


def test_raw_pooled_connection_refuses_writes(target: Target) -> None:
    before = target.checksum()
    engine = get_engine(target.concert)
    for statement in (
        "INSERT INTO singer (Singer_ID, Name) VALUES (100, 'x')",
        "DELETE FROM singer",
    ):
        with engine.connect() as conn, pytest.raises(Exception) as caught:
            conn.exec_driver_sql(statement)
        message = str(caught.value).lower()
        assert "readonly" in message or "read-only" in message
    assert target.checksum() == before


@pytest.mark.parametrize("statement", SLIPPED_WRITES)
def test_a_write_that_slips_past_the_guard_still_cannot_write(
    target: Target, statement: str
) -> None:
    before = target.checksum()
    with mock.patch.object(
        relation_inventory, "guard_verdict", return_value=GuardVerdict(True, "ok")
    ):
        result = execute_sql(target.concert, statement, timeout=5)
    assert not result.outcome.ran, f"{statement} ran on {target.engine}"
    assert result.error
    assert target.checksum() == before
    assert_usable(target.concert, "singer", 6)


def test_sqlite_authorizer_blocks_what_mode_ro_alone_lets_through(tmp_path: Path) -> None:
    # Without the guard, mode=ro still lets ATTACH create a file, VACUUM INTO write a copy and
    # fts3_tokenizer take a pointer; the authorizer refuses all three while SQLite prepares.
    attached, copy = tmp_path / "attached.db", tmp_path / "copy.db"
    ref = resolve_database(str(concert_db()))
    with mock.patch.object(
        relation_inventory, "guard_verdict", return_value=GuardVerdict(True, "ok")
    ):
        for statement in (
            f"ATTACH '{attached}' AS evil",
            f"VACUUM INTO '{copy}'",
            "SELECT fts3_tokenizer('simple', x'4141414141414141')",
            "PRAGMA query_only = OFF",
            "BEGIN IMMEDIATE",
        ):
            result = execute_sql(ref, statement)
            assert result.outcome == Outcome.REJECTED, (statement, result.outcome, result.error)
            assert "read-only" in (result.error or "")
    assert not attached.exists() and not copy.exists()
    assert_usable(ref, "singer", 6)


def test_sqlite_query_only_is_reasserted_on_every_use(sqlite_copy: Path) -> None:
    ref = resolve_database(str(sqlite_copy))
    engine = get_engine(ref)
    with engine.connect() as conn:
        raw = conn.connection.driver_connection
        raw.execute("PRAGMA query_only = OFF")  # as if something had switched it off
        result = execution._run_sqlite(conn, "SELECT 1", execution.Bounds.starting_now(5, 10))
        assert result.rows == [(1,)]
        assert raw.execute("PRAGMA query_only").fetchone() == (1,)


@pytest.mark.postgres
def test_postgres_session_changes_do_not_survive_one_execution(
    pg_spider: Callable[[str], DatabaseRef],
) -> None:
    ref = pg_spider("concert_singer")
    with get_engine(ref).connect() as conn:
        # set_config slipped past the guard: it runs, inside the read-only transaction...
        execution._run_postgres(
            conn,
            "SELECT set_config('default_transaction_read_only', 'off', false)",
            execution.Bounds.starting_now(5, 10),
        )
        # ...and is rolled back with it: the same connection still refuses writes.
        with pytest.raises(Exception, match="read-only transaction"):
            conn.exec_driver_sql("INSERT INTO singer (singer_id) VALUES (100)")


# --- layer 3: timeouts ---------------------------------------------------------------------


@pytest.mark.parametrize("runaway", ["endless_cte", "cross_join", "slow_stream"])
def test_runaway_query_stops_within_timeout_and_connection_stays_usable(
    target: Target, runaway: str
) -> None:
    ref, sql, max_rows = {
        "endless_cte": (target.concert, ENDLESS_CTE, 100),
        "cross_join": (target.world, CROSS_JOIN, 100),
        "slow_stream": (target.concert, SLOW_STREAM, None),  # the scorers fetch everything
    }[runaway]
    result, elapsed = timed(ref, sql, timeout=TIMEOUT, max_rows=max_rows)
    assert result.outcome == Outcome.TIMEOUT, (result.outcome, result.error)
    assert elapsed <= generous(TIMEOUT + SLACK), f"{runaway} on {target.engine} took {elapsed:.2f}s"
    assert "timeout" in (result.error or "")
    table, count = ("singer", 6) if ref is target.concert else ("city", 4079)
    assert_usable(ref, table, count)


def test_timeout_leaves_no_handler_behind(target: Target) -> None:
    timed(target.concert, ENDLESS_CTE, timeout=0.2)
    # a longer legitimate query on the same pool is not cut by the earlier, shorter deadline
    result, _ = timed(
        target.concert,
        "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 300000) "
        "SELECT count(*) FROM c",
        timeout=10,
    )
    assert result.outcome == Outcome.OK, result.error
    assert result.rows == [(300000,)]


# --- layer 3: the row cap and memory -----------------------------------------------------------


def measure(run: Callable[[], ExecutionResult]) -> tuple[ExecutionResult, int, int]:
    """(result, peak Python allocation, resident-set growth) of one call, in bytes."""
    gc.collect()
    page = os.sysconf("SC_PAGE_SIZE")

    def rss() -> int:
        with open("/proc/self/statm") as statm:
            return int(statm.read().split()[1]) * page

    rss_before = rss()
    tracemalloc.start()
    try:
        result = run()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return result, peak, rss() - rss_before


def test_ten_million_row_result_is_capped_and_memory_stays_flat(target: Target) -> None:
    execute_sql(target.concert, "SELECT 1")  # warm the pool outside the measurement
    started = time.monotonic()
    result, peak, rss_growth = measure(
        lambda: execute_sql(target.concert, HUGE, timeout=30, max_rows=100)
    )
    elapsed = time.monotonic() - started
    assert result.outcome == Outcome.OK, result.error
    assert len(result.rows) == 100
    assert result.truncated is True
    assert result.rows[0] == (1,) and result.rows[-1] == (100,)
    # Ten million rows take far longer than this to produce.
    assert elapsed < generous(0.5), f"took {elapsed:.2f}s: rows were produced beyond the cap"
    assert peak < 2_000_000, f"peak Python allocation {peak:,} bytes"
    assert rss_growth < 30_000_000, f"resident set grew {rss_growth:,} bytes"


@pytest.mark.slow
def test_memory_measure_would_catch_an_uncapped_fetch(target: Target) -> None:
    # The same measurement sees 300,000 fetched rows: the flat figure above is not blindness.
    result, peak, _ = measure(
        lambda: execute_sql(
            target.concert,
            HUGE.replace("10000000", "300000"),
            timeout=30,
            max_rows=None,
        )
    )
    assert result.outcome == Outcome.OK, result.error
    assert len(result.rows) == 300000
    assert peak > 10 * 2_000_000


def test_long_cells_are_cut_in_state(target: Target) -> None:
    long_text = (
        "SELECT printf('%.100000d', 0) AS big"
        if target.engine == "sqlite"
        else "SELECT repeat('x', 100000) AS big"
    )
    result = execute_sql(target.concert, long_text)
    assert result.outcome == Outcome.OK, result.error
    assert len(result.rows[0][0]) == 100000
    state = result.to_state(max_cell_chars=200)
    assert len(state["rows"][0][0]) == 200
    assert state["rows"][0][0].endswith("…")


def test_guard_rejection_costs_no_connection(target: Target) -> None:
    engine = statement_engine(target.concert)
    before = engine.pool.checkedout()
    result = execute_sql(target.concert, "DROP TABLE singer")
    assert result.outcome == Outcome.REJECTED
    assert result.elapsed == 0.0
    assert engine.pool.checkedout() == before
