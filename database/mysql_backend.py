"""MySQL and MariaDB (PyMySQL): the read-only engine and the bounded execution of one query.

Read-only at the engine: every session starts `SET SESSION TRANSACTION READ ONLY`, and every
query runs inside `START TRANSACTION READ ONLY`, so the server refuses writes to tables. The
timeout really stops the query, twice over: the server's own limit (`max_execution_time` on
MySQL, `max_statement_time` on MariaDB) and a watchdog that sends `KILL QUERY` from a second
connection at the deadline, which also covers a slow streamed fetch. Rows stream through an
unbuffered cursor (`SSCursor`); when the row cap cuts a result short, the rest of the query is
killed instead of being read to the end.
"""

from __future__ import annotations

import contextlib
import socket
import threading
from typing import Any

from sqlalchemy import create_engine
from sqlalchemy.engine import Connection, Engine


def mysql_engine(url: str) -> Engine:
    """A pooled engine whose sessions default to read-only transactions."""
    return create_engine(
        url,
        connect_args={"init_command": "SET SESSION TRANSACTION READ ONLY", "charset": "utf8mb4"},
        pool_size=4,
        max_overflow=8,
        pool_pre_ping=True,
    )


def _kill_query(engine: Engine, thread_id: int) -> None:
    """`KILL QUERY` the session `thread_id`, from a connection of its own."""
    import pymysql

    args, kwargs = engine.dialect.create_connect_args(engine.url)
    kwargs.pop("init_command", None)
    try:
        killer = pymysql.connect(*args, **kwargs, connect_timeout=5)
    except pymysql.MySQLError:
        return  # the server-side limit still applies
    try:
        with killer.cursor() as cursor:
            cursor.execute(f"KILL QUERY {int(thread_id)}")
    except pymysql.MySQLError:
        pass  # the query already ended
    finally:
        killer.close()


class QueryInterrupted(Exception):
    """The watchdog stopped the query at its deadline."""


def _cut(raw: Any) -> None:
    """Shut the client's socket: a read in progress ends at once, nothing more is drained."""
    sock = getattr(raw, "_sock", None)
    if sock is not None:
        with contextlib.suppress(OSError):
            sock.shutdown(socket.SHUT_RDWR)


def _forget_result(cursor: Any, raw: Any) -> None:
    """PyMySQL reads an unbuffered result to its end when the cursor is closed or collected;
    on a shut socket that only raises, so mark the result finished (private attributes)."""
    result = getattr(cursor, "_result", None)
    if result is not None:
        result.unbuffered_active = False
    cursor._result = None
    raw._result = None


def run_mysql(
    conn: Connection,
    sql: str,
    timeout: float,
    max_rows: int | None,
    fetch: Any,
) -> tuple[list[str], list[tuple[Any, ...]], bool]:
    """Run `sql` on a pooled MySQL/MariaDB connection; return (columns, rows, truncated).

    `fetch(cursor, max_rows)` is the executor's batched fetch. At the deadline the watchdog
    kills the query on the server and shuts this connection's socket, so that rows already
    on their way are not read either; the connection is then dropped from the pool.
    """
    import pymysql.cursors

    raw: Any = conn.connection.driver_connection
    raw.rollback()
    thread_id = raw.thread_id()
    engine = conn.engine
    mariadb = "mariadb" in str(raw.get_server_info()).lower()
    limit = (
        f"SET SESSION max_statement_time = {max(0.001, timeout):.3f}"
        if mariadb
        else f"SET SESSION max_execution_time = {max(1, int(timeout * 1000))}"
    )
    with raw.cursor() as setup:
        setup.execute(limit)
        setup.execute("START TRANSACTION READ ONLY")
    fired = threading.Event()

    def at_deadline() -> None:
        fired.set()
        _cut(raw)  # first: the reading thread returns now; the kill may take a connect
        _kill_query(engine, thread_id)

    watchdog = threading.Timer(max(0.0, timeout), at_deadline)
    watchdog.daemon = True
    watchdog.start()
    cursor = raw.cursor(pymysql.cursors.SSCursor)
    broken = False
    try:
        cursor.execute(sql)
        description = cursor.description
        columns = [str(d[0]) for d in description or ()]
        rows, truncated = fetch(cursor, max_rows) if description else ([], False)
        if truncated:
            # Closing an unbuffered cursor would read the rest of the result: cut instead.
            broken = True
            _cut(raw)
    except pymysql.MySQLError as exc:
        if fired.is_set():
            raise QueryInterrupted("query execution was interrupted at the deadline") from exc
        raise
    finally:
        watchdog.cancel()
        if fired.is_set():
            watchdog.join()  # a KILL QUERY still on its way would hit the session's next query
        if broken or fired.is_set():
            _forget_result(cursor, raw)
            conn.invalidate()  # the socket is shut: the pool must not hand it out again
        else:
            with contextlib.suppress(pymysql.MySQLError):
                cursor.close()
            raw.rollback()
            with raw.cursor() as reset:  # the pool's next user (e.g. the inspector) runs unbounded
                reset.execute(limit.rsplit("=", 1)[0] + "= 0")
    return columns, rows, truncated
