"""MySQL and MariaDB (PyMySQL): the read-only engine and the bounded execution of one query.

Read-only at the engine: every session starts `SET SESSION TRANSACTION READ ONLY`, and every
query runs inside `START TRANSACTION READ ONLY`, so the server refuses writes to tables. Every
new connection also pins `sql_mode` (`session_pinning`), is refused when its user may do more
than read (`least_privilege`), and gets a server-side statement limit. The timeout really stops
the query, twice over: the server's own limit (`max_execution_time` on MySQL,
`max_statement_time` on MariaDB) and a watchdog that sends `KILL QUERY` from a second
connection at the deadline, which also covers a slow streamed fetch. Rows stream through an
unbuffered cursor (`SSCursor`); when the row cap cuts a result short, the rest of the query is
killed instead of being read to the end.

`BoundedConnection` is PyMySQL's connection with two bounds it lacks: its handshake has a read
timeout (a server that accepts TCP and never answers would otherwise hang the caller for
ever), and every byte read while a result is fetched is charged to the result's byte budget,
so a row of many large values stops as it arrives, not once it is whole.
"""

from __future__ import annotations

import contextlib
import socket
import threading
from typing import Any

import pymysql
import pymysql.connections
from sqlalchemy import create_engine, event
from sqlalchemy.engine import Connection, Engine

from macsql.database.least_privilege import enforce, mysql_privileges
from macsql.database.result_budget import ByteBudget
from macsql.database.session_pinning import (
    CONNECT_TIMEOUT_S,
    SERVER_STATEMENT_TIMEOUT_S,
    pin_mysql_session,
)


class BoundedConnection(pymysql.connections.Connection):
    """PyMySQL's connection, its handshake bounded and its result reads charged to a budget
    (both through private methods of PyMySQL 1.1+: `_read_timeout`, `_read_bytes`)."""

    budget: ByteBudget | None = None

    def connect(self, sock: Any = None) -> None:
        super().connect(sock)
        # `read_timeout` bounded the handshake; queries are bounded by the watchdog instead.
        self._read_timeout = None

    def _read_bytes(self, num_bytes: int) -> bytes:
        budget = self.budget
        if budget is not None:
            budget.charge(num_bytes)
        data: bytes = super()._read_bytes(num_bytes)
        return data


def mysql_engine(
    url: str, key: str = "", shown: str = "", allow_privileged: bool = False
) -> Engine:
    """A pooled engine whose sessions default to read-only transactions, with the pinned
    `sql_mode`, a server-side statement limit, and a user that may only read (unless
    `allow_privileged`). `key` and `shown` name the database in notes and messages."""
    engine = create_engine(
        url,
        connect_args={
            "init_command": "SET SESSION TRANSACTION READ ONLY",
            "charset": "utf8mb4",
            "connect_timeout": CONNECT_TIMEOUT_S,
            "read_timeout": CONNECT_TIMEOUT_S,
        },
        pool_size=4,
        max_overflow=8,
        pool_pre_ping=True,
    )

    @event.listens_for(engine, "do_connect")
    def _bounded(_dialect: Any, _record: Any, cargs: Any, cparams: Any) -> Any:
        return BoundedConnection(*cargs, **cparams)

    @event.listens_for(engine, "connect")
    def _checked(dbapi_conn: Any, _record: Any) -> None:
        # A refusal here makes SQLAlchemy close the new connection and raise it to the caller.
        pin_mysql_session(dbapi_conn)
        user, problems = mysql_privileges(dbapi_conn)
        enforce(key or url, shown or url, f"the user {user}", problems, allow_privileged)
        with dbapi_conn.cursor() as cursor:
            cursor.execute(_statement_limit(dbapi_conn, SERVER_STATEMENT_TIMEOUT_S))

    return engine


def _statement_limit(raw: Any, seconds: float) -> str:
    if "mariadb" in str(raw.get_server_info()).lower():
        return f"SET SESSION max_statement_time = {max(0.001, seconds):.3f}"
    return f"SET SESSION max_execution_time = {max(1, int(seconds * 1000))}"


def _kill_query(engine: Engine, thread_id: int) -> None:
    """`KILL QUERY` the session `thread_id`, from a connection of its own."""

    args, kwargs = engine.dialect.create_connect_args(engine.url)
    kwargs.pop("init_command", None)
    kwargs["connect_timeout"] = kwargs["read_timeout"] = 5
    try:
        killer = pymysql.connect(*args, **kwargs)
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
    max_bytes: int | None = None,
) -> tuple[list[str], list[tuple[Any, ...]], bool]:
    """Run `sql` on a pooled MySQL/MariaDB connection; return (columns, rows, truncated).

    `fetch(cursor, max_rows)` is the executor's batched fetch. At the deadline the watchdog
    kills the query on the server and shuts this connection's socket, so that rows already
    on their way are not read either; the connection is then dropped from the pool. With
    `max_bytes`, the bytes read from the server are charged to that budget as they arrive.
    """
    import pymysql.cursors

    raw: Any = conn.connection.driver_connection
    raw.rollback()
    thread_id = raw.thread_id()
    engine = conn.engine
    limit = _statement_limit(raw, timeout)
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
    if max_bytes is not None and isinstance(raw, BoundedConnection):
        raw.budget = ByteBudget(max_bytes)
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
    except BaseException:
        # Stopped mid-read (the byte budget): the protocol state is lost, and the query may
        # still be producing rows; it is killed as at a deadline.
        if not fired.is_set():
            broken = True
            _cut(raw)
            _kill_query(engine, thread_id)
        raise
    finally:
        if isinstance(raw, BoundedConnection):
            raw.budget = None
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
            with raw.cursor() as reset:  # the pool's next user gets the session's own limit
                reset.execute(_statement_limit(raw, SERVER_STATEMENT_TIMEOUT_S))
    return columns, rows, truncated
