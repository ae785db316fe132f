"""DuckDB: the read-only engine and the bounded execution of one query.

Read-only at the engine: every connection opens the file with `read_only=True` (DuckDB then
refuses any write to it), with external access disabled (no file, URL, ATTACH, COPY, INSTALL or
LOAD of an extension) and the configuration locked, so that a statement cannot turn these back
on. The timeout really stops the query: a watchdog thread calls the connection's `interrupt()`
at the deadline, during execution or the streamed fetch. Rows are fetched in batches, at most
`max_rows` (+1 to tell whether more exist).
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

from sqlalchemy import create_engine
from sqlalchemy.engine import Connection, Engine, make_url

# A locked configuration keeps these for the connection's life; `temp_directory = ''` means a
# query that outgrows memory fails instead of spilling files beside the database.
READ_ONLY_CONFIG: dict[str, object] = {
    "enable_external_access": False,
    "autoinstall_known_extensions": False,
    "autoload_known_extensions": False,
    "allow_community_extensions": False,
    "temp_directory": "",
    "lock_configuration": True,
}


def duckdb_path(url: str) -> Path | None:
    """The database file of a `duckdb:///path` URL (None for an in-memory database)."""
    database = make_url(url).database
    if not database or database == ":memory:":
        return None
    return Path(database).expanduser()


def duckdb_engine(url: str) -> Engine:
    """A pooled engine whose every connection is read-only with external access disabled."""
    return create_engine(
        url,
        connect_args={"read_only": True, "config": dict(READ_ONLY_CONFIG)},
        pool_size=4,
        max_overflow=8,
    )


def run_duckdb(
    conn: Connection,
    sql: str,
    timeout: float,
    max_rows: int | None,
    fetch: Any,
) -> tuple[list[str], list[tuple[Any, ...]], bool]:
    """Run `sql` on a pooled DuckDB connection; return (columns, rows, truncated).

    `fetch(cursor, max_rows)` is the executor's batched fetch. A query still running at the
    deadline is interrupted and raises DuckDB's `InterruptException` ("Interrupted").
    """
    raw: Any = conn.connection.driver_connection
    cursor = raw.cursor()
    # The watchdog interrupts the cursor's own connection: a duckdb cursor is a connection.
    watchdog = threading.Timer(max(0.0, timeout), cursor.interrupt)
    watchdog.daemon = True
    watchdog.start()
    try:
        cursor.execute(sql)
        description = cursor.description
        columns = [str(d[0]) for d in description or ()]
        rows, truncated = fetch(cursor, max_rows) if description else ([], False)
    finally:
        watchdog.cancel()
        cursor.close()
    return columns, rows, truncated


# The database's own catalog only: not `system`, `temp` or anything ATTACHed.
_OURS = "WHERE database_name = current_database() AND schema_name = ?"


class DuckDBInspector:
    """The part of SQLAlchemy's inspector that `build_schema` uses, read from DuckDB's own
    catalog functions (duckdb-engine's inherited PostgreSQL queries fail on DuckDB's catalog)."""

    def __init__(self, engine: Engine, schema: str = "main") -> None:
        self._engine = engine
        self._schema = schema

    def _rows(self, sql: str, *params: object) -> list[tuple[Any, ...]]:
        with self._engine.connect() as conn:
            raw: Any = conn.connection.driver_connection
            cursor = raw.cursor()
            try:
                cursor.execute(sql, [self._schema, *params])
                return [tuple(r) for r in cursor.fetchall()]
            finally:
                cursor.close()

    def get_table_names(self) -> list[str]:
        sql = f"SELECT table_name FROM duckdb_tables() {_OURS} AND NOT temporary"
        return [r[0] for r in self._rows(sql)]

    def get_view_names(self) -> list[str]:
        sql = f"SELECT view_name FROM duckdb_views() {_OURS} AND NOT internal"
        return [r[0] for r in self._rows(sql)]

    def get_columns(self, table: str) -> list[dict[str, Any]]:
        sql = (
            f"SELECT column_name, data_type FROM duckdb_columns() {_OURS} "
            "AND table_name = ? ORDER BY column_index"
        )
        return [{"name": name, "type": kind} for name, kind in self._rows(sql, table)]

    def _constraints(self, table: str, kind: str) -> list[tuple[Any, ...]]:
        sql = (
            "SELECT constraint_column_names, referenced_table, referenced_column_names "
            f"FROM duckdb_constraints() {_OURS} AND table_name = ? "
            "AND constraint_type = ? ORDER BY constraint_index"
        )
        return self._rows(sql, table, kind)

    def get_pk_constraint(self, table: str) -> dict[str, Any]:
        keys = self._constraints(table, "PRIMARY KEY")
        return {"constrained_columns": list(keys[0][0]) if keys else []}

    def get_foreign_keys(self, table: str) -> list[dict[str, Any]]:
        return [
            {
                "constrained_columns": list(local),
                "referred_table": remote_table,
                "referred_columns": list(remote or []),
            }
            for local, remote_table, remote in self._constraints(table, "FOREIGN KEY")
        ]
