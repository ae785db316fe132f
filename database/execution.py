"""Guarded, bounded execution of model-written SQL.

Every statement passes the read-only guard first, then runs on a read-only connection (SQLite:
`mode=ro`, `PRAGMA query_only` and an authorizer that lets SQLite's own parser allow reads only;
PostgreSQL: a READ ONLY transaction, inside a server-side cursor, which only accepts a query)
under a timeout that really stops the query (SQLite: a progress handler; PostgreSQL: the
server's `statement_timeout`, cut to the time left before every fetch), and at most `max_rows`
rows are fetched. Failures come back as an `ExecutionResult` with a classified status, never as
an exception: bad SQL is data for the Refiner, and a raised `OperationalError` would be retried
by LangGraph's default RetryPolicy.

DuckDB and MySQL/MariaDB have runners of their own with the same guarantees (`duckdb_backend`,
`mysql_backend`); other SQLAlchemy backends get the guard and the row cap only.
"""

from __future__ import annotations

import datetime as dt
import decimal
import functools
import sqlite3
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from sqlalchemy.engine import Connection

from macsql.database.connection import DatabaseRef, get_engine
from macsql.database.duckdb_backend import run_duckdb
from macsql.database.guard import GuardKind, function_allowed, make_policy
from macsql.database.mysql_backend import run_mysql
from macsql.database.relation_inventory import guard_verdict
from macsql.graph.state import ExecutionRecord

FETCH_BATCH = 1000

# Backends whose read-only session, timeout and streamed fetch live in their own module.
_BACKEND_RUNNERS = {"duckdb": run_duckdb, "mysql": run_mysql, "mariadb": run_mysql}


class Outcome(StrEnum):
    """How a SQL execution ended; the Refiner is told which."""

    OK = "ok"
    SYNTAX_ERROR = "syntax_error"
    UNKNOWN_OBJECT = "unknown_table_or_column"
    EXECUTION_ERROR = "execution_error"
    TIMEOUT = "timeout"
    REJECTED = "rejected"
    EMPTY_RESULT = "empty_result"
    NULL_RESULT = "null_result"
    NO_SQL = "no_sql"
    DATABASE_ERROR = "database_error"

    @property
    def ran(self) -> bool:
        """True when the SQL executed without error (its rows may still be unwanted)."""
        return self in (Outcome.OK, Outcome.EMPTY_RESULT, Outcome.NULL_RESULT)


@dataclass
class ExecutionResult:
    """What one execution produced: rows (capped) or a classified error."""

    sql: str
    outcome: Outcome
    columns: list[str] = field(default_factory=list)
    rows: list[tuple[Any, ...]] = field(default_factory=list)
    truncated: bool = False
    error: str | None = None
    error_class: str | None = None
    elapsed: float = 0.0

    def to_state(self, max_rows: int | None = None, max_cell_chars: int = 200) -> ExecutionRecord:
        """A JSON-safe dict for graph state and checkpoints."""
        rows = self.rows if max_rows is None else self.rows[:max_rows]
        return {
            "sql": self.sql,
            "outcome": str(self.outcome),
            "columns": list(self.columns),
            "rows": [[json_safe(v, max_cell_chars) for v in row] for row in rows],
            "row_count": len(self.rows),
            "truncated": self.truncated or (max_rows is not None and len(self.rows) > max_rows),
            "error": self.error,
            "error_class": self.error_class,
            "elapsed": round(self.elapsed, 6),
        }


def json_safe(value: Any, max_chars: int = 200) -> Any:
    """A cell value as JSON can hold it, long texts cut to `max_chars`."""
    if value is None or isinstance(value, bool | int):
        return value
    if isinstance(value, float):
        return value if value == value and abs(value) != float("inf") else str(value)
    if isinstance(value, decimal.Decimal):
        return float(value) if value.is_finite() else str(value)
    if isinstance(value, bytes | bytearray | memoryview):
        value = f"<{len(bytes(value))} bytes>"
    elif isinstance(value, dt.date | dt.datetime | dt.time):
        value = value.isoformat()
    text = str(value)
    return text if len(text) <= max_chars else text[: max_chars - 1] + "…"


def execute_sql(
    db: DatabaseRef,
    sql: str,
    *,
    timeout: float = 30.0,
    max_rows: int | None = 100,
    allowed_functions: tuple[str, ...] = (),
    allowed_relations: tuple[str, ...] = (),
) -> ExecutionResult:
    """Run one read-only statement with a timeout and a row cap; never raises on bad SQL.

    `max_rows=None` fetches every row, in batches (the scorers need whole results).
    `allowed_functions` and `allowed_relations` extend the guard's allow-lists
    (`Context.allowed_functions`, `Context.allowed_relations`).
    """
    sql = (sql or "").strip()
    if not sql:
        return ExecutionResult(sql, Outcome.NO_SQL, error="no SQL to execute", error_class="NoSQL")
    try:
        verdict = guard_verdict(db, sql, allowed_functions, allowed_relations)
    except Exception as exc:  # the database's inventory could not be read
        return _classify_failure(sql, exc, 0.0, timeout)
    if not verdict.allowed:
        outcome = _GUARD_OUTCOMES.get(verdict.kind, Outcome.REJECTED)
        return ExecutionResult(sql, outcome, error=verdict.reason, error_class="GuardRejection")
    started = time.perf_counter()
    try:
        engine = get_engine(db)
        with engine.connect() as conn:
            if db.backend == "sqlite":
                extra = make_policy(None, allowed_functions).allowed_functions
                result = _run_sqlite(conn, sql, timeout, max_rows, sqlite_authorizer(extra))
            elif db.backend == "postgresql":
                result = _run_postgres(conn, sql, timeout, max_rows)
            elif db.backend in _BACKEND_RUNNERS:
                run = _BACKEND_RUNNERS[db.backend]
                result = ExecutionResult(
                    sql, Outcome.OK, *run(conn, sql, timeout, max_rows, _fetch)
                )
            else:
                result = _run_generic(conn, sql, max_rows)
    except Exception as exc:  # driver errors (sqlite3, psycopg) and SQLAlchemy's wrappers
        return _classify_failure(sql, exc, time.perf_counter() - started, timeout)
    result.elapsed = time.perf_counter() - started
    return result


_GUARD_OUTCOMES: dict[str, Outcome] = {
    GuardKind.SYNTAX: Outcome.SYNTAX_ERROR,
    # a table the database does not have: the same class as the engine's "no such table"
    GuardKind.UNKNOWN_RELATION: Outcome.UNKNOWN_OBJECT,
}


def _fetch(
    cursor: Any, max_rows: int | None, before_batch: Callable[[], None] | None = None
) -> tuple[list[tuple[Any, ...]], bool]:
    """Fetch up to `max_rows` rows in batches; one extra row tells whether more exist."""
    rows: list[tuple[Any, ...]] = []
    while max_rows is None or len(rows) <= max_rows:
        want = FETCH_BATCH if max_rows is None else min(FETCH_BATCH, max_rows + 1 - len(rows))
        if before_batch is not None:
            before_batch()
        batch = cursor.fetchmany(want)
        if not batch:
            break
        rows.extend(tuple(r) for r in batch)
    truncated = max_rows is not None and len(rows) > max_rows
    return (rows[:max_rows] if truncated else rows), truncated


class _DeadlineExceeded(Exception):
    """The whole execution (all fetches together) ran past its timeout."""


def _columns(description: Sequence[Sequence[Any]] | None) -> list[str]:
    return [str(d[0]) for d in description or ()]


_SQLITE_READ_ACTIONS = frozenset(
    {sqlite3.SQLITE_SELECT, sqlite3.SQLITE_READ, sqlite3.SQLITE_RECURSIVE}
)


@functools.lru_cache(maxsize=64)
def sqlite_authorizer(allowed_functions: frozenset[str] = frozenset()) -> Authorizer:
    """SQLite's own parser asks before every action of a statement: only reading is allowed.

    A second, independent layer under the guard: ATTACH (which would create a file), VACUUM
    INTO, PRAGMA, transactions, DDL, DML and every function that is not on the guard's
    allow-list (extended by `allowed_functions`) are denied while SQLite prepares the
    statement, whatever the text looked like to sqlglot.
    """

    def authorize(
        action: int, arg1: str | None, arg2: str | None, _db: str | None, _trigger: str | None
    ) -> int:
        if action == sqlite3.SQLITE_FUNCTION:
            allowed = function_allowed(arg2 or "", "sqlite", allowed_functions)
            return sqlite3.SQLITE_OK if allowed else sqlite3.SQLITE_DENY
        return sqlite3.SQLITE_OK if action in _SQLITE_READ_ACTIONS else sqlite3.SQLITE_DENY

    return authorize


Authorizer = Callable[[int, str | None, str | None, str | None, str | None], int]


def _run_sqlite(
    conn: Connection,
    sql: str,
    timeout: float,
    max_rows: int | None,
    authorizer: Authorizer | None = None,
) -> ExecutionResult:
    raw: Any = conn.connection.driver_connection
    # Re-assert read-only on every use of a pooled connection: `mode=ro` already refuses writes
    # to the file, and query_only also refuses TEMP tables, whatever an earlier statement did.
    raw.execute("PRAGMA query_only = ON")
    deadline = time.monotonic() + timeout
    # SQLite calls the handler every N virtual-machine steps; a non-zero return aborts the
    # statement with "interrupted", so the query really stops, with no thread left running.
    raw.set_progress_handler(lambda: int(time.monotonic() > deadline), 10_000)
    raw.set_authorizer(authorizer or sqlite_authorizer())
    cursor = raw.cursor()
    try:
        cursor.execute(sql)
        columns = _columns(cursor.description)
        rows, truncated = _fetch(cursor, max_rows) if cursor.description else ([], False)
    finally:
        cursor.close()
        raw.set_authorizer(None)
        raw.set_progress_handler(None, 0)
    return ExecutionResult(sql, Outcome.OK, columns, rows, truncated)


def _run_postgres(
    conn: Connection, sql: str, timeout: float, max_rows: int | None
) -> ExecutionResult:
    raw: Any = conn.connection.driver_connection
    raw.rollback()
    raw.read_only = True
    deadline = time.monotonic() + timeout

    def limit_to_deadline() -> None:
        # statement_timeout bounds each statement, and every FETCH is one: give each only the
        # time left, so that a result streamed in many batches still stops at the deadline.
        left = deadline - time.monotonic()
        if left <= 0:
            raise _DeadlineExceeded("canceling statement due to statement timeout")
        raw.execute(f"SET statement_timeout = {max(1, int(left * 1000))}")

    try:
        limit_to_deadline()
        # A named (server-side) cursor streams rows, so a huge result never lands in memory.
        with raw.cursor(name="macsql_query") as cursor:
            cursor.itersize = FETCH_BATCH
            cursor.execute(sql)
            columns = _columns(cursor.description)
            rows, truncated = (
                _fetch(cursor, max_rows, limit_to_deadline) if cursor.description else ([], False)
            )
    finally:
        raw.rollback()
    return ExecutionResult(sql, Outcome.OK, columns, rows, truncated)


def _run_generic(conn: Connection, sql: str, max_rows: int | None) -> ExecutionResult:
    streamed = conn.execution_options(stream_results=True).exec_driver_sql(sql)
    try:
        columns = list(streamed.keys()) if streamed.returns_rows else []
        rows, truncated = _fetch(streamed, max_rows) if streamed.returns_rows else ([], False)
    finally:
        streamed.close()
        conn.rollback()
    return ExecutionResult(sql, Outcome.OK, columns, rows, truncated)


_SYNTAX_MARKERS = (
    "syntax error",
    "incomplete input",
    "unrecognized token",
    "unterminated",
    "42601",
    "error in your sql syntax",  # MySQL/MariaDB 1064
)
_UNKNOWN_MARKERS = (
    "no such table",
    "no such column",
    "does not exist",
    "42p01",
    "42703",
    "no such function",
    "42883",
    "doesn't exist",  # MySQL/MariaDB 1146
    "unknown column",  # MySQL/MariaDB 1054
    "does not exist",
)
_TIMEOUT_MARKERS = ("interrupted", "statement timeout", "canceling statement", "57014")
# The engine's own read-only layer refused the statement (SQLite's authorizer or read-only
# file, PostgreSQL's read-only transaction): the same class as a guard rejection.
_REFUSED_MARKERS = (
    "not authorized",
    "authorization denied",
    "readonly database",
    "read-only transaction",
    "25006",
    "read-only mode",  # DuckDB: a file opened read_only
    "disabled by configuration",  # DuckDB: external access disabled
    "disabled through configuration",
    "configuration has been locked",
    "read only transaction",  # MySQL/MariaDB 1792
    "1792",
)


def _classify_failure(sql: str, exc: Exception, elapsed: float, timeout: float) -> ExecutionResult:
    orig = getattr(exc, "orig", None) or exc
    message = str(orig).strip().splitlines()[0] if str(orig).strip() else type(orig).__name__
    code = str(getattr(orig, "sqlstate", "") or "").lower()
    probe = f"{message.lower()} {code}"
    if any(m in probe for m in _TIMEOUT_MARKERS):
        outcome = Outcome.TIMEOUT
        message = f"query exceeded the {timeout:g}s timeout and was interrupted"
    elif any(m in probe for m in _REFUSED_MARKERS):
        outcome = Outcome.REJECTED
        message = f"the database refused it (macsql runs read-only): {message}"
    elif any(m in probe for m in _SYNTAX_MARKERS):
        outcome = Outcome.SYNTAX_ERROR
    elif any(m in probe for m in _UNKNOWN_MARKERS):
        outcome = Outcome.UNKNOWN_OBJECT
    else:
        outcome = Outcome.EXECUTION_ERROR
    return ExecutionResult(
        sql, outcome, error=message, error_class=type(orig).__name__, elapsed=elapsed
    )
