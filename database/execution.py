"""Guarded, bounded execution of model-written SQL.

Every statement passes the read-only guard first, then runs on a read-only connection under a
timeout that really stops the query (SQLite: a progress handler; PostgreSQL: the server's
`statement_timeout`), and at most `max_rows` rows are fetched. Failures come back as an
`ExecutionResult` with a classified status, never as an exception: bad SQL is data for the
Refiner, and a raised `OperationalError` would be retried by LangGraph's default RetryPolicy.
"""

from __future__ import annotations

import datetime as dt
import decimal
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from sqlalchemy.engine import Connection

from macsql.database.connection import DatabaseRef, get_engine
from macsql.database.guard import check_statement

FETCH_BATCH = 1000


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

    def to_state(self, max_rows: int | None = None, max_cell_chars: int = 200) -> dict[str, Any]:
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
) -> ExecutionResult:
    """Run one read-only statement with a timeout and a row cap; never raises on bad SQL.

    `max_rows=None` fetches every row, in batches (the scorers need whole results).
    """
    sql = (sql or "").strip()
    if not sql:
        return ExecutionResult(sql, Outcome.NO_SQL, error="no SQL to execute", error_class="NoSQL")
    verdict = check_statement(sql, db.dialect)
    if not verdict.allowed:
        outcome = Outcome.SYNTAX_ERROR if verdict.kind == "syntax" else Outcome.REJECTED
        return ExecutionResult(sql, outcome, error=verdict.reason, error_class="GuardRejection")
    started = time.perf_counter()
    try:
        engine = get_engine(db)
        with engine.connect() as conn:
            if db.backend == "sqlite":
                result = _run_sqlite(conn, sql, timeout, max_rows)
            elif db.backend == "postgresql":
                result = _run_postgres(conn, sql, timeout, max_rows)
            else:
                result = _run_generic(conn, sql, max_rows)
    except Exception as exc:  # driver errors (sqlite3, psycopg) and SQLAlchemy's wrappers
        return _classify_failure(sql, exc, time.perf_counter() - started, timeout)
    result.elapsed = time.perf_counter() - started
    return result


def _fetch(cursor: Any, max_rows: int | None) -> tuple[list[tuple[Any, ...]], bool]:
    """Fetch up to `max_rows` rows in batches; one extra row tells whether more exist."""
    rows: list[tuple[Any, ...]] = []
    while max_rows is None or len(rows) <= max_rows:
        want = FETCH_BATCH if max_rows is None else min(FETCH_BATCH, max_rows + 1 - len(rows))
        batch = cursor.fetchmany(want)
        if not batch:
            break
        rows.extend(tuple(r) for r in batch)
    truncated = max_rows is not None and len(rows) > max_rows
    return (rows[:max_rows] if truncated else rows), truncated


def _columns(description: Sequence[Sequence[Any]] | None) -> list[str]:
    return [str(d[0]) for d in description or ()]


def _run_sqlite(
    conn: Connection, sql: str, timeout: float, max_rows: int | None
) -> ExecutionResult:
    raw = conn.connection.driver_connection
    deadline = time.monotonic() + timeout
    # SQLite calls the handler every N virtual-machine steps; a non-zero return aborts the
    # statement with "interrupted", so the query really stops, with no thread left running.
    raw.set_progress_handler(lambda: int(time.monotonic() > deadline), 10_000)
    cursor = raw.cursor()
    try:
        cursor.execute(sql)
        columns = _columns(cursor.description)
        rows, truncated = _fetch(cursor, max_rows) if cursor.description else ([], False)
    finally:
        cursor.close()
        raw.set_progress_handler(None, 0)
    return ExecutionResult(sql, Outcome.OK, columns, rows, truncated)


def _run_postgres(
    conn: Connection, sql: str, timeout: float, max_rows: int | None
) -> ExecutionResult:
    raw = conn.connection.driver_connection
    raw.rollback()
    raw.read_only = True
    try:
        with raw.cursor() as setup:
            setup.execute(f"SET statement_timeout = {max(1, int(timeout * 1000))}")
        # A named (server-side) cursor streams rows, so a huge result never lands in memory.
        with raw.cursor(name="macsql_query") as cursor:
            cursor.itersize = FETCH_BATCH
            cursor.execute(sql)
            columns = _columns(cursor.description)
            rows, truncated = _fetch(cursor, max_rows) if cursor.description else ([], False)
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
)
_UNKNOWN_MARKERS = (
    "no such table",
    "no such column",
    "does not exist",
    "42p01",
    "42703",
    "no such function",
    "42883",
)
_TIMEOUT_MARKERS = ("interrupted", "statement timeout", "canceling statement", "57014")


def _classify_failure(sql: str, exc: Exception, elapsed: float, timeout: float) -> ExecutionResult:
    orig = getattr(exc, "orig", None) or exc
    message = str(orig).strip().splitlines()[0] if str(orig).strip() else type(orig).__name__
    code = str(getattr(orig, "sqlstate", "") or "").lower()
    probe = f"{message.lower()} {code}"
    if any(m in probe for m in _TIMEOUT_MARKERS):
        outcome = Outcome.TIMEOUT
        message = f"query exceeded the {timeout:g}s timeout and was interrupted"
    elif any(m in probe for m in _SYNTAX_MARKERS):
        outcome = Outcome.SYNTAX_ERROR
    elif any(m in probe for m in _UNKNOWN_MARKERS):
        outcome = Outcome.UNKNOWN_OBJECT
    else:
        outcome = Outcome.EXECUTION_ERROR
    return ExecutionResult(
        sql, outcome, error=message, error_class=type(orig).__name__, elapsed=elapsed
    )
