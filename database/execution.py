"""Guarded, bounded execution of model-written SQL.

Every statement passes the read-only guard first, and what runs is the text the guard wrote
from the tree it checked (`GuardVerdict.sql`), never the model's own text. It runs on a
read-only connection (SQLite: `mode=ro`, `PRAGMA query_only` and an authorizer that lets
SQLite's own parser allow reads only; PostgreSQL: a READ ONLY transaction, inside a server-side
cursor, which only accepts a query) under a wall-clock deadline that holds whatever the query
does, the guard's own work and the connection included, and within two bounds on what is
fetched: at most `max_rows` rows and `max_bytes` bytes.

- The deadline: a watchdog thread (`database/watchdog.py`) interrupts the SQLite connection, or
  sends PostgreSQL a cancel request and, if the server does not stop within `PG_ABANDON_GRACE`
  seconds, shuts the connection's socket so the caller returns and ends the session from a side
  connection (`pg_terminate_backend`); that connection is then discarded from the pool. The
  server's own `statement_timeout` stays as a second layer.
- The byte budget, charged as values are converted (`result_budget`): SQLite refuses any value
  longer than the budget over the number of columns as it computes it
  (`SQLITE_LIMIT_LENGTH`), PostgreSQL's loaders charge each cell before they convert it
  (`postgres_budget`); rows are fetched in batches sized from the largest row seen so far, so
  a result of 40 MB cells is stopped after a row or two, not a hundred.

DuckDB and MySQL/MariaDB have runners of their own that stop the query themselves
(`duckdb_backend`, `mysql_backend`: interrupt(), KILL QUERY), under the same caller deadline and
budgets; other SQLAlchemy backends get the guard, the caller deadline and the budgets only.

Failures come back as an `ExecutionResult` with a classified status, never as an exception: bad
SQL is data for the Refiner, and a raised `OperationalError` would be retried by LangGraph's
default RetryPolicy.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import decimal
import functools
import os
import socket
import sqlite3
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING, Any

from macsql.core.records import ExecutionRecord
from macsql.core.worker_threads import WorkerThreads
from macsql.database.connection import (
    STATEMENTS_ONLY,
    DatabaseRef,
    sqlite_open_hint,
    statement_engine,
)
from macsql.database.connection_errors import DatabaseUnavailableError
from macsql.database.guard_functions import SQLITE_TABLE_FUNCTIONS
from macsql.database.guard_verdicts import GuardKind, GuardVerdict
from macsql.database.result_budget import ByteBudget, ResultTooLarge, too_large_message
from macsql.database.watchdog import WATCHDOG

if TYPE_CHECKING:
    from sqlalchemy.engine import Connection

    from macsql.database.statement_limits import StatementLimits

# The guard (sqlglot) and the backends (SQLAlchemy) are imported by the first execution, not
# with this module: the graph imports it long before any SQL exists.

FETCH_BATCH = 1000
"""The most rows fetched at once; batches start at one row and double, within the budget."""
DEFAULT_MAX_RESULT_BYTES = 64 * 1024 * 1024
"""The default byte budget of one result (`Context.max_result_bytes`)."""
MAX_ERROR_CHARS = 400
"""A database message is cut to this length: a value quoted in an error can be megabytes."""
PG_ABANDON_GRACE = 0.25
"""Seconds a PostgreSQL server has to honour a cancel before its connection is abandoned and
its session ended from a side connection."""
ABANDON_GRACE = 0.35
"""Seconds past the deadline after which the caller stops waiting for a statement at all."""

_SQL_WORKERS = WorkerThreads("macsql-sql")
"""The threads that statements run in, reused from one statement to the next."""


def _backend_runner(backend: str) -> Callable[..., Any] | None:
    """The runner of a backend whose read-only session, timeout and streamed fetch live in its
    own module, or None."""
    if backend == "duckdb":
        from macsql.database.duckdb_backend import run_duckdb

        return run_duckdb
    if backend in ("mysql", "mariadb"):
        from macsql.database.mysql_backend import run_mysql

        return run_mysql
    return None


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
    TOO_LARGE = "result_too_large"

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
    executed: str | None = None
    """The text the server ran: the guard's rewrite of `sql` from the tree it checked."""

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


@dataclass(frozen=True)
class Bounds:
    """What one execution may spend: wall-clock seconds, rows and bytes."""

    timeout: float
    max_rows: int | None
    max_bytes: int
    deadline: float

    @classmethod
    def starting_now(
        cls, timeout: float, max_rows: int | None, max_bytes: int = DEFAULT_MAX_RESULT_BYTES
    ) -> Bounds:
        return cls(timeout, max_rows, max(1, max_bytes), time.monotonic() + timeout)


def execute_sql(
    db: DatabaseRef,
    sql: str,
    *,
    timeout: float = 30.0,
    max_rows: int | None = 100,
    allowed_functions: tuple[str, ...] = (),
    allowed_relations: tuple[str, ...] = (),
    max_bytes: int = DEFAULT_MAX_RESULT_BYTES,
    limits: StatementLimits | None = None,
) -> ExecutionResult:
    """Run one read-only statement within a deadline, a row cap and a byte budget; never
    raises on bad SQL.

    `max_rows=None` fetches every row, in batches (the scorers need whole results); the byte
    budget still holds.
    `allowed_functions` and `allowed_relations` extend the guard's allow-lists
    (`Context.allowed_functions`, `Context.allowed_relations`); `limits` are the statement's
    size limits (`Context.statement_limits()`; the defaults when None).
    The deadline starts now: the guard, the database's inventory and the connection count.
    """
    sql = (sql or "").strip()
    if not sql:
        return ExecutionResult(sql, Outcome.NO_SQL, error="no SQL to execute", error_class="NoSQL")
    started = time.perf_counter()
    bounds = Bounds.starting_now(timeout, max_rows, max_bytes)
    # The guard and the statement run in a worker thread that the caller waits for until the
    # deadline plus a grace: the watchdog stops nearly every query by then, but a server may
    # not answer at all. Then the caller returns, and the worker discards its connection when
    # the server finally does.
    done: dict[str, Any] = {}
    abandoned = threading.Event()
    finished = threading.Event()

    def run() -> None:
        from macsql.database.relation_inventory import guard_verdict

        try:
            verdict = guard_verdict(
                db, sql, allowed_functions, allowed_relations, limits, bounds.max_bytes
            )
            done["verdict"] = verdict
            if verdict.allowed and not abandoned.is_set():
                statement = verdict.sql or sql
                done["ran_at"] = time.perf_counter()  # elapsed: the database's time only
                done["result"] = _run_on_connection(
                    db, statement, bounds, abandoned, allowed_functions, verdict.columns
                )
        except Exception as exc:  # driver errors (sqlite3, psycopg) and SQLAlchemy's wrappers
            done["error"] = exc
        finally:
            finished.set()

    _SQL_WORKERS.run(run)
    if not finished.wait(timeout + ABANDON_GRACE):
        abandoned.set()
        done.setdefault("error", _DeadlineExceeded("abandoned"))
    verdict: GuardVerdict | None = done.get("verdict")
    if verdict is not None and not verdict.allowed:
        outcome = _GUARD_OUTCOMES.get(verdict.kind, Outcome.REJECTED)
        return ExecutionResult(
            sql, outcome, error=bounded_message(verdict.reason), error_class="GuardRejection"
        )
    if "error" in done:
        return _classify_failure(sql, done["error"], time.perf_counter() - started, bounds, db)
    result: ExecutionResult = done["result"]
    result.executed = result.sql
    result.sql = sql
    result.elapsed = time.perf_counter() - done.get("ran_at", started)
    return result


def statements_in_flight() -> int:
    """Statement workers of this process still busy, callers gone or not: an in-process
    engine's step that outlived its deadline would show here (0 when every statement ended)."""
    alive = sum(1 for thread in threading.enumerate() if thread.name == _SQL_WORKERS.name)
    return max(0, alive - _SQL_WORKERS.idle())


_GUARD_OUTCOMES: dict[str, Outcome] = {
    GuardKind.SYNTAX: Outcome.SYNTAX_ERROR,
    # a table the database does not have: the same class as the engine's "no such table"
    GuardKind.UNKNOWN_RELATION: Outcome.UNKNOWN_OBJECT,
}


def _run_on_connection(
    db: DatabaseRef,
    sql: str,
    bounds: Bounds,
    abandoned: threading.Event,
    allowed_functions: tuple[str, ...],
    column_count: int | None = None,
) -> ExecutionResult:
    from macsql.database.guard import make_policy

    with statement_engine(db).connect() as conn:
        try:
            if db.backend == "sqlite":
                extra = make_policy(None, allowed_functions).allowed_functions
                return _run_sqlite(conn, sql, bounds, sqlite_authorizer(extra), column_count)
            if db.backend == "postgresql":
                return _run_postgres(conn, sql, bounds)
            run = _backend_runner(db.backend)
            if run is not None:
                left = max(0.0, bounds.deadline - time.monotonic())
                fetch = lambda cursor, _: _fetch(cursor, bounds)  # noqa: E731
                columns, rows, truncated = run(
                    conn, sql, left, bounds.max_rows, fetch, bounds.max_bytes
                )
                return ExecutionResult(sql, Outcome.OK, columns, rows, truncated)
            return _run_generic(conn, sql, bounds)
        finally:
            if abandoned.is_set():  # the caller has gone: this connection may be mid-statement
                conn.invalidate()


def bounded_message(text: str | None, limit: int = MAX_ERROR_CHARS) -> str:
    """A message on one line, cut to `limit` characters."""
    flat = " ".join((text or "").split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def row_bytes(row: Sequence[Any]) -> int:
    """The memory a fetched row holds, roughly as Python stores it (a tuple of objects)."""
    size = 56 + 8 * len(row)
    for value in row:
        if isinstance(value, str | bytes | bytearray | memoryview):
            size += 49 + len(value)
        else:
            size += 32
    return size


class _DeadlineExceeded(Exception):
    """The whole execution (all fetches together) ran past its timeout."""


def _fetch(cursor: Any, bounds: Bounds) -> tuple[list[tuple[Any, ...]], bool]:
    """Fetch up to `max_rows` rows (one extra tells whether more exist) within the byte budget.

    Batches start at one row and double, but never hold more rows than the budget left divided
    by the largest row seen: a result of huge cells stops after the row that crosses the budget.
    """
    max_rows = bounds.max_rows
    rows: list[tuple[Any, ...]] = []
    used, largest, want = 0, 1, 1
    while max_rows is None or len(rows) <= max_rows:
        if time.monotonic() > bounds.deadline:
            raise _DeadlineExceeded("canceling statement due to statement timeout")
        want = min(want, FETCH_BATCH, max(1, (bounds.max_bytes - used) // largest))
        if max_rows is not None:
            want = min(want, max_rows + 1 - len(rows))
        batch = cursor.fetchmany(want)
        if not batch:
            break
        for raw_row in batch:
            row = tuple(raw_row)
            size = row_bytes(row)
            used += size
            largest = max(largest, size)
            if used > bounds.max_bytes:
                rows.clear()  # let the memory go before the message is built
                raise ResultTooLarge(too_large_message(bounds.max_bytes))
            rows.append(row)
        want = 2 * len(batch)
    truncated = max_rows is not None and len(rows) > max_rows
    return (rows[:max_rows] if truncated else rows), truncated


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

    from macsql.database.guard import function_allowed

    def authorize(
        action: int, arg1: str | None, arg2: str | None, _db: str | None, _trigger: str | None
    ) -> int:
        if action == sqlite3.SQLITE_FUNCTION:
            allowed = function_allowed(arg2 or "", "sqlite", allowed_functions)
            return sqlite3.SQLITE_OK if allowed else sqlite3.SQLITE_DENY
        return sqlite3.SQLITE_OK if action in _SQLITE_READ_ACTIONS else sqlite3.SQLITE_DENY

    return authorize


Authorizer = Callable[[int, str | None, str | None, str | None, str | None], int]


_INSTALLED_AUTHORIZER = "macsql_authorizer"
_TABLE_FUNCTIONS_READY = "macsql_table_functions"


def _connect_table_functions(raw: sqlite3.Connection) -> None:
    """Declare the allowed table-valued functions (`json_each`, ...) on this connection, with
    no authorizer: SQLite declares each on its first use, which the authorizer would deny as a
    write to sqlite_master ("vtable constructor failed"). Declared, they stay for the
    connection's life. One that this SQLite lacks stays missing, and a query using it fails
    with SQLite's own "no such table"."""
    for name in SQLITE_TABLE_FUNCTIONS:
        with contextlib.suppress(sqlite3.Error):
            raw.execute(f"SELECT * FROM {name}('[]') LIMIT 0").fetchall()


def _run_sqlite(
    conn: Connection,
    sql: str,
    bounds: Bounds,
    authorizer: Authorizer | None = None,
    column_count: int | None = None,
) -> ExecutionResult:
    """`column_count`: how many columns `sql` returns, when the guard could tell (else a probe
    prepares it once more to count them)."""
    raw: Any = conn.connection.driver_connection
    info = conn.connection.info  # the DBAPI connection's own: emptied if it is invalidated
    authorizer = authorizer or sqlite_authorizer()
    if info.get(_INSTALLED_AUTHORIZER) is not authorizer:
        # Read-only before the authorizer, which then denies every PRAGMA: `mode=ro` already
        # refuses writes to the file, query_only also refuses TEMP tables. On a connection that
        # runs only guarded statements both stay set, and nothing a statement may do under the
        # authorizer changes either (`connection.statement_engine`).
        raw.set_authorizer(None)
        raw.execute("PRAGMA query_only = ON")
        if not info.get(_TABLE_FUNCTIONS_READY):
            _connect_table_functions(raw)
            info[_TABLE_FUNCTIONS_READY] = True
        raw.set_authorizer(authorizer)
        info[_INSTALLED_AUTHORIZER] = authorizer
    # The watchdog interrupts from outside: one VM step can outlast any progress-handler tick.
    alarm = WATCHDOG.arm(bounds.deadline, raw.interrupt)
    old_length = raw.getlimit(sqlite3.SQLITE_LIMIT_LENGTH)
    cursor = raw.cursor()
    try:
        # No value may grow past its share of the budget: SQLite holds a whole row before
        # Python converts it, so a row of 30 values of 60 MB fails as its values are built.
        columns_count = column_count or _sqlite_column_count(cursor, sql)
        share = min(bounds.max_bytes, 1_000_000_000) // max(1, columns_count)
        raw.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, max(1024, share))
        cursor.execute(sql)
        columns = _columns(cursor.description)
        rows, truncated = _fetch(cursor, bounds) if cursor.description else ([], False)
    finally:
        fired = alarm.disarm()
        cursor.close()
        if not info.get(STATEMENTS_ONLY):  # a connection macsql's own reads use too
            raw.set_authorizer(None)
            info.pop(_INSTALLED_AUTHORIZER, None)
        raw.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, old_length)
    if fired:  # finished in the instant the alarm went off: the deadline still counts
        raise _DeadlineExceeded("interrupted")
    return ExecutionResult(sql, Outcome.OK, columns, rows, truncated)


def _sqlite_column_count(cursor: sqlite3.Cursor, sql: str) -> int:
    """The columns `sql` returns, read without computing a row (1 when it is not a query the
    probe can wrap: the statement then fails on its own)."""
    try:
        return len(cursor.execute(f"SELECT * FROM ({sql}) LIMIT 0").description or ()) or 1
    except sqlite3.Error:
        return 1


class _PostgresStopper:
    """Stops a PostgreSQL query at its deadline from the watchdog thread: a cancel request
    first, and if the server goes on (some functions never check for cancellation), a
    shutdown of the connection's socket, which makes the waiting driver call fail at once,
    and the end of the session from a side connection (`pg_terminate_backend`: a role may
    end its own sessions)."""

    def __init__(self, raw: Any, deadline: float, side: Callable[[], Any] | None = None) -> None:
        self._raw = raw
        self._side = side
        self._pid = raw.info.backend_pid
        self._alarms = [
            WATCHDOG.arm(deadline, self._cancel),
            WATCHDOG.arm(deadline + PG_ABANDON_GRACE, self._abandon),
        ]

    def _cancel(self) -> None:
        # A cancel request opens its own connection to the server: not on the watchdog thread.
        threading.Thread(target=self._send_cancel, daemon=True).start()

    def _send_cancel(self) -> None:
        # The query may have ended meanwhile, or the server be unreachable: nothing to do then.
        with contextlib.suppress(Exception):
            self._raw.cancel_safe(timeout=max(PG_ABANDON_GRACE, 1.0))

    def _abandon(self) -> None:
        # shutdown() on a duplicate of the socket ends the real one for both sides, without
        # freeing anything the blocked driver call still uses.
        sock = socket.socket(fileno=os.dup(self._raw.fileno()))
        try:
            sock.shutdown(socket.SHUT_RDWR)
        finally:
            sock.close()
        if self._side is not None:
            threading.Thread(target=self._terminate, daemon=True).start()

    def _terminate(self) -> None:
        assert self._side is not None
        with contextlib.suppress(Exception):
            side = self._side()
            try:
                with side.cursor() as cursor:
                    cursor.execute("SELECT pg_terminate_backend(%s)", (self._pid,))
            finally:
                side.close()

    def disarm(self) -> bool:
        """True when the deadline fired (the connection must then be discarded)."""
        return any([alarm.disarm() for alarm in self._alarms])


def _side_connection(conn: Connection) -> Callable[[], Any]:
    """Opens a connection of its own to the server `conn` talks to, as the same role."""
    engine = conn.engine
    args, kwargs = engine.dialect.create_connect_args(engine.url)

    def connect() -> Any:
        import psycopg

        return psycopg.connect(*args, **{**kwargs, "connect_timeout": 5, "autocommit": True})

    return connect


def _run_postgres(conn: Connection, sql: str, bounds: Bounds) -> ExecutionResult:
    from macsql.database.postgres_budget import charging

    raw: Any = conn.connection.driver_connection
    raw.rollback()
    raw.read_only = True
    # The server's own timeout as a second layer, for a connection the client has abandoned.
    raw.execute(f"SET statement_timeout = {max(1, int(bounds.timeout * 1000))}")
    stopper = _PostgresStopper(raw, bounds.deadline, _side_connection(conn))
    fired = False
    try:
        # A named (server-side) cursor streams rows, so a huge result never lands in memory;
        # its cells are charged to the budget as they are converted.
        with charging(raw, ByteBudget(bounds.max_bytes)), raw.cursor(name="macsql_query") as cursor:
            cursor.execute(sql)
            columns = _columns(cursor.description)
            rows, truncated = _fetch(cursor, bounds) if cursor.description else ([], False)
    except BaseException:
        fired = stopper.disarm()
        if fired:
            conn.invalidate()  # cancelled or cut off: never hand this connection out again
            raise _DeadlineExceeded("canceling statement due to statement timeout") from None
        raise
    finally:
        if not fired:
            fired = stopper.disarm()
            if fired:
                conn.invalidate()
            else:
                raw.rollback()
    if fired:
        raise _DeadlineExceeded("canceling statement due to statement timeout")
    return ExecutionResult(sql, Outcome.OK, columns, rows, truncated)


def _run_generic(conn: Connection, sql: str, bounds: Bounds) -> ExecutionResult:
    streamed = conn.execution_options(stream_results=True).exec_driver_sql(sql)
    try:
        columns = list(streamed.keys()) if streamed.returns_rows else []
        rows, truncated = _fetch(streamed, bounds) if streamed.returns_rows else ([], False)
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


_TOO_LARGE_MARKERS = ("string or blob too big", "54000", "out of memory")


def _classify_failure(
    sql: str, exc: Exception, elapsed: float, bounds: Bounds, db: DatabaseRef
) -> ExecutionResult:
    orig = getattr(exc, "orig", None) or exc
    message = str(orig).strip().splitlines()[0] if str(orig).strip() else type(orig).__name__
    code = str(getattr(orig, "sqlstate", "") or "").lower()
    probe = f"{message[:2000].lower()} {code}"
    hint = (
        sqlite_open_hint(db.sqlite_path)
        if db.sqlite_path is not None and "unable to open database file" in probe
        else None
    )
    if hint is not None:
        outcome = Outcome.DATABASE_ERROR
        message = hint
    elif isinstance(orig, DatabaseUnavailableError):  # a privileged role, an unpinned setting
        outcome = Outcome.DATABASE_ERROR
        message = str(orig)
    elif isinstance(orig, _DeadlineExceeded) or any(m in probe for m in _TIMEOUT_MARKERS):
        outcome = Outcome.TIMEOUT
        message = f"query exceeded the {bounds.timeout:g}s timeout and was interrupted"
    elif isinstance(orig, ResultTooLarge):
        outcome = Outcome.TOO_LARGE
    elif any(m in probe for m in _TOO_LARGE_MARKERS):
        outcome = Outcome.TOO_LARGE
        message = f"{too_large_message(bounds.max_bytes)} ({bounded_message(message, 120)})"
    elif any(m in probe for m in _REFUSED_MARKERS):
        outcome = Outcome.REJECTED
        message = f"the database refused it (macsql runs read-only): {message}"
    elif any(m in probe for m in _SYNTAX_MARKERS):
        outcome = Outcome.SYNTAX_ERROR
    elif any(m in probe for m in _UNKNOWN_MARKERS):
        outcome = Outcome.UNKNOWN_OBJECT
    else:
        outcome = Outcome.EXECUTION_ERROR
    long_message = hint is not None or outcome == Outcome.DATABASE_ERROR
    return ExecutionResult(
        sql,
        outcome,
        error=bounded_message(message, 2 * MAX_ERROR_CHARS if long_message else MAX_ERROR_CHARS),
        error_class=type(orig).__name__,
        elapsed=elapsed,
    )
