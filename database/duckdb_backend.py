"""DuckDB: the read-only engine and the bounded execution of one query.

Read-only at the engine: every connection opens the file with `read_only=True` (DuckDB then
refuses any write to it), with external access disabled (no file, URL, ATTACH, COPY, INSTALL or
LOAD of an extension) and the configuration locked, so that a statement cannot turn these back
on. Every new connection is checked to be so (`least_privilege.duckdb_problems`).

DuckDB runs inside this process, so its memory is ours: `memory_limit` bounds what its operators
hold (a `list(i)` over 30 million rows stops at the limit instead of taking 3.2 GB) and
`threads` what it burns. The timeout really stops the query: a watchdog thread calls the
connection's `interrupt()` at the deadline, during execution or the streamed fetch.

Rows are fetched in batches, at most `max_rows` (+1 to tell whether more exist). A result with
nested values (lists, structs, maps) is read as Arrow batches of `ARROW_BATCH_ROWS` rows, and
each batch's size as Python objects is charged to the byte budget before it is converted (one
list of 30 million integers is 240 MB in DuckDB and over 1 GB as a Python list).
"""

from __future__ import annotations

import datetime as dt
import decimal
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from sqlalchemy import create_engine, event
from sqlalchemy.engine import Connection, Engine, make_url

from macsql.database.least_privilege import duckdb_problems, enforce
from macsql.database.result_budget import ByteBudget

MEMORY_LIMIT = "256MB"
"""What one DuckDB database may hold in memory (operators, aggregates, intermediate results)."""
THREADS = 2
"""DuckDB's worker threads per database."""
ARROW_BATCH_ROWS = 64
"""Rows per Arrow batch when a result holds nested values."""

# A locked configuration keeps these for the connection's life; `temp_directory = ''` means a
# query that outgrows memory fails instead of spilling files beside the database.
READ_ONLY_CONFIG: dict[str, object] = {
    "enable_external_access": False,
    "autoinstall_known_extensions": False,
    "autoload_known_extensions": False,
    "allow_community_extensions": False,
    "temp_directory": "",
    "memory_limit": MEMORY_LIMIT,
    "threads": THREADS,
    "lock_configuration": True,
}


def duckdb_path(url: str) -> Path | None:
    """The database file of a `duckdb:///path` URL (None for an in-memory database)."""
    database = make_url(url).database
    if not database or database == ":memory:":
        return None
    return Path(database).expanduser()


def duckdb_engine(
    url: str, key: str = "", shown: str = "", allow_privileged: bool = False
) -> Engine:
    """A pooled engine whose every connection is read-only with external access disabled, its
    memory and threads bounded (checked on connect; `key` and `shown` name the database)."""
    engine = create_engine(
        url,
        connect_args={"read_only": True, "config": dict(READ_ONLY_CONFIG)},
        pool_size=4,
        max_overflow=8,
    )

    @event.listens_for(engine, "connect")
    def _checked(dbapi_conn: Any, _record: Any) -> None:
        problems = duckdb_problems(dbapi_conn)
        enforce(key or url, shown or url, "this connection", problems, allow_privileged)

    return engine


_NESTED = frozenset({"list", "struct", "map", "array", "union"})


def run_duckdb(
    conn: Connection,
    sql: str,
    timeout: float,
    max_rows: int | None,
    fetch: Any,
    max_bytes: int | None = None,
) -> tuple[list[str], list[tuple[Any, ...]], bool]:
    """Run `sql` on a pooled DuckDB connection; return (columns, rows, truncated).

    `fetch(cursor, max_rows)` is the executor's batched fetch. A query still running at the
    deadline is interrupted and raises DuckDB's `InterruptException` ("Interrupted"). A result
    with nested values is converted batch by batch within `max_bytes`.
    """
    raw: Any = conn.connection.driver_connection
    cursor = raw.cursor()
    # The watchdog interrupts the cursor's own connection: a duckdb cursor is a connection.
    watchdog = threading.Timer(max(0.0, timeout), cursor.interrupt)
    watchdog.daemon = True
    watchdog.start()
    reader: Any = None
    try:
        relation = cursor.sql(sql)  # bound, not run: its types decide how rows are read
        types = list(relation.types) if relation is not None else []
        if any(str(getattr(t, "id", "")).lower() in _NESTED for t in types):
            columns = list(relation.columns)
            try:
                reader = relation.to_arrow_reader(ARROW_BATCH_ROWS)
            except ModuleNotFoundError as exc:
                raise RuntimeError(
                    "a result with lists, structs or maps needs pyarrow to be read within the "
                    'byte budget: pip install "macsql[duckdb]"'
                ) from exc
            rows_source = ArrowRows(reader, types, ByteBudget(max_bytes or 2**62))
            rows, truncated = fetch(rows_source, max_rows)
        else:
            cursor.execute(sql)
            description = cursor.description
            columns = [str(d[0]) for d in description or ()]
            rows, truncated = fetch(cursor, max_rows) if description else ([], False)
    finally:
        watchdog.cancel()
        if reader is not None:
            reader.close()  # a result left open would block the pooled connection
        cursor.close()
    return columns, rows, truncated


class ArrowRows:
    """Rows of an Arrow batch reader, each batch's Python size charged before it is built."""

    def __init__(self, reader: Any, types: list[Any], budget: ByteBudget) -> None:
        self._reader = reader
        self._kinds = [str(getattr(t, "id", "")).lower() for t in types]
        self._budget = budget
        self._pending: Iterator[tuple[Any, ...]] = iter(())

    def fetchmany(self, size: int) -> list[tuple[Any, ...]]:
        rows: list[tuple[Any, ...]] = []
        while len(rows) < size:
            row = next(self._pending, None)
            if row is None:
                if not self._next_batch():
                    break
                continue
            rows.append(row)
        return rows

    def _next_batch(self) -> bool:
        try:
            batch = self._reader.read_next_batch()
        except StopIteration:
            return False
        self._budget.charge(sum(python_bytes(column) for column in batch.columns))
        columns = [
            [_native(value, kind) for value in column.to_pylist()]
            for column, kind in zip(batch.columns, self._kinds, strict=False)
        ]
        self._pending = iter(list(zip(*columns, strict=False)))
        return True


def python_bytes(array: Any) -> int:
    """An upper estimate of the memory an Arrow array takes once converted to Python objects."""
    import pyarrow as pa

    count = len(array)
    kind = array.type
    if pa.types.is_dictionary(kind):
        return 8 * count + python_bytes(array.dictionary)
    if pa.types.is_map(kind):
        return 120 * count + python_bytes(array.keys) + python_bytes(array.items)
    if pa.types.is_list(kind) or pa.types.is_large_list(kind) or pa.types.is_fixed_size_list(kind):
        return 64 * count + python_bytes(array.flatten())
    if pa.types.is_struct(kind):
        return 240 * count + sum(python_bytes(array.field(i)) for i in range(kind.num_fields))
    if pa.types.is_string(kind) or pa.types.is_binary(kind) or pa.types.is_large_string(kind):
        return 56 * count + array.nbytes
    return 32 * count


def _native(value: Any, kind: str) -> Any:
    """A value as DuckDB's own Python conversion gives it, where Arrow's differs."""
    if value is None:
        return None
    if kind in ("hugeint", "uhugeint") and isinstance(value, decimal.Decimal):
        return int(value)
    if kind == "interval" and hasattr(value, "days") and hasattr(value, "nanoseconds"):
        return dt.timedelta(
            days=30 * value.months + value.days, microseconds=value.nanoseconds / 1000
        )
    if kind == "map" and isinstance(value, list):
        return dict(value)
    return value


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
            f"SELECT column_name, data_type, comment FROM duckdb_columns() {_OURS} "
            "AND table_name = ? ORDER BY column_index"
        )
        return [
            {"name": name, "type": kind, "comment": comment}
            for name, kind, comment in self._rows(sql, table)
        ]

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
