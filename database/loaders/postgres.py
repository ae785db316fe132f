"""Copy SQLite databases (Spider's, or any other) into PostgreSQL.

macsql tests PostgreSQL as a real server. This loader gives it real data: each SQLite file
becomes one PostgreSQL *database* of the same name (for example `concert_singer`), with its
tables in `public`, so the unqualified table names of Spider's SQL work unchanged.

Choices, and why:

- **Names are folded to lower case** (and always quoted when created). PostgreSQL folds unquoted
  identifiers to lower case, so `SELECT Name FROM singer` only finds a column created as `name`.
  Both fold ASCII letters only and SQLite's names are case-insensitive, so nothing is lost.
- **Column types follow the data.** SQLite does not enforce declared types and Spider's data is
  messy (text in integer columns, empty strings among numbers). A column becomes `integer` or
  `bigint` only when every value is an integer, `double precision` (or `numeric` for declared
  DECIMAL/NUMERIC) when every value is a number, `bytea` when every value is a blob, and `text`
  otherwise. Dates stay `text`, as SQLite stores them, so string functions and comparisons on
  them keep working. An all-NULL column takes its type from the declared type.
- **Collation `C`**, so that `ORDER BY` on text sorts by bytes, like SQLite's BINARY collation.
- **Keys where possible.** Primary keys and foreign keys are added after the data; one that the
  data violates (SQLite does not enforce them) is skipped, or added `NOT VALID` for foreign keys,
  and recorded in the report.
- **Idempotent.** The database carries a comment `macsql-loader:v2:<sha256 of the file>:...`;
  a database already loaded from the same file (by the same loader version, with the same
  options) is skipped, one loaded from another version of it is replaced, and a database
  that the loader did not create is never dropped unless `replace=True`.

The loader needs a role that may create databases. It writes through its own engine, created
here with AUTOCOMMIT; macsql's pooled engines (`macsql.database.connection`) stay read-only.

The command line is `macsql load` (`macsql.database.loaders.command`).
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from sqlalchemy import create_engine, text
from sqlalchemy.engine import URL, Engine, make_url
from sqlalchemy.exc import DBAPIError
from sqlalchemy.pool import NullPool

from macsql.database.loaders.plan import (
    LOADER_VERSION,
    MARKER_PREFIX,
    LoaderError,
    LoadReport,
    TablePlan,
    file_sha256,
    open_sqlite,
    plan_tables,
    quote_ident,
    source_rows,
    sqlite_sources,
)

DEFAULT_SPIDER_DATABASES: tuple[str, ...] = (
    "concert_singer",
    "pets_1",
    "car_1",
    "flight_2",
    "world_1",
)
"""The Spider dev databases loaded by default (CI loads these)."""


def psycopg_url(url: str | URL) -> URL:
    """A PostgreSQL URL with the psycopg 3 driver (what `postgresql://` means to macsql)."""
    parsed = make_url(url)
    if parsed.get_backend_name() not in ("postgresql", "postgres"):
        raise LoaderError(f"not a PostgreSQL URL: {parsed.render_as_string(hide_password=True)}")
    if parsed.drivername in ("postgresql", "postgres"):
        parsed = parsed.set(drivername="postgresql+psycopg")
    return parsed


def database_url(pg_url: str | URL, database: str) -> str:
    """`pg_url` pointing at `database` instead (password kept), as a string for `--db`."""
    return psycopg_url(pg_url).set(database=database).render_as_string(hide_password=False)


def _writable_engine(url: URL) -> Engine:
    # Its own engine, never the pooled read-only one; AUTOCOMMIT so each DDL stands alone and
    # CREATE/DROP DATABASE can run.
    return create_engine(url, isolation_level="AUTOCOMMIT", poolclass=NullPool)


def _load_table(pg: Any, sqlite_conn: sqlite3.Connection, plan: TablePlan) -> int:
    columns = ", ".join(
        f"{quote_ident(c.name)} {c.pg_type}{' NOT NULL' if c.not_null else ''}"
        for c in plan.columns
    )
    count = 0
    with pg.transaction(), pg.cursor() as cur:
        cur.execute(f"CREATE TABLE {quote_ident(plan.name)} ({columns})")
        names = ", ".join(quote_ident(c.name) for c in plan.columns)
        with cur.copy(f"COPY {quote_ident(plan.name)} ({names}) FROM STDIN") as copy:
            for row in source_rows(sqlite_conn, plan):
                copy.write_row(row)
                count += 1
    return count


def _try_ddl(pg: Any, statement: str) -> str | None:
    """Run one DDL statement in its own transaction; the error's first line on failure."""
    try:
        with pg.transaction(), pg.cursor() as cur:
            cur.execute(statement)
    except Exception as exc:  # psycopg.Error: the constraint does not hold or types differ
        return str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return None


def _add_keys(pg: Any, plans: list[TablePlan], report: LoadReport) -> None:
    tables = {plan.name: plan for plan in plans}
    primary: dict[str, list[str]] = {}
    for plan in plans:
        if not plan.primary_key:
            continue
        key_list = ", ".join(quote_ident(c) for c in plan.primary_key)
        error = _try_ddl(pg, f"ALTER TABLE {quote_ident(plan.name)} ADD PRIMARY KEY ({key_list})")
        if error:
            report.warnings.append(f"primary key of {plan.name} ({key_list}) skipped: {error}")
        else:
            report.primary_keys += 1
            primary[plan.name] = plan.primary_key
    for plan in plans:
        for cols, ref_table, ref_cols in plan.foreign_keys:
            target = tables.get(ref_table)
            if target is None:
                report.warnings.append(
                    f"foreign key {plan.name}({', '.join(cols)}) skipped: "
                    f"table {ref_table} does not exist"
                )
                continue
            resolved = ref_cols if all(ref_cols) else primary.get(ref_table, target.primary_key)
            known = {c.name for c in target.columns}
            resolved = [c for c in resolved if c in known]
            if len(resolved) != len(cols):
                report.warnings.append(
                    f"foreign key {plan.name}({', '.join(cols)}) -> {ref_table} skipped: "
                    f"referenced columns unknown"
                )
                continue
            statement = (
                f"ALTER TABLE {quote_ident(plan.name)} ADD FOREIGN KEY "
                f"({', '.join(quote_ident(c) for c in cols)}) REFERENCES "
                f"{quote_ident(ref_table)} ({', '.join(quote_ident(c) for c in resolved)})"
            )
            error = _try_ddl(pg, statement)
            if error and "violates foreign key" in error:
                # The data breaks it (SQLite never checked); keep the declared link unchecked.
                error = _try_ddl(pg, statement + " NOT VALID")
                if not error:
                    report.warnings.append(
                        f"foreign key {plan.name}({', '.join(cols)}) -> {ref_table} added "
                        f"NOT VALID: existing rows violate it"
                    )
            if error:
                report.warnings.append(
                    f"foreign key {plan.name}({', '.join(cols)}) -> {ref_table} skipped: {error}"
                )
            else:
                report.foreign_keys += 1


def _database_marker(admin: Engine, name: str) -> tuple[bool, str | None]:
    with admin.connect() as conn:
        row = conn.execute(
            text(
                "SELECT shobj_description(oid, 'pg_database') FROM pg_database "
                "WHERE datname = :name"
            ),
            {"name": name},
        ).first()
    return (row is not None, row[0] if row is not None else None)


def _set_marker(admin: Engine, name: str, marker: str) -> None:
    with admin.connect() as conn:
        conn.exec_driver_sql(
            f"COMMENT ON DATABASE {quote_ident(name)} IS '{marker.replace(chr(39), chr(39) * 2)}'"
        )


def copy_sqlite_to_postgres(
    sqlite_path: str | Path,
    pg_url: str | URL,
    database_name: str | None = None,
    *,
    replace: bool = False,
    grant_select_to: str | None = None,
    numeric_text: bool = True,
) -> LoadReport:
    """Copy one SQLite file into its own PostgreSQL database (created if missing).

    `pg_url` names any database on the server that the role may connect to (the maintenance
    database `postgres` is usual); the role needs CREATEDB. `database_name` defaults to the
    file's stem. With `replace=True` an existing database of that name is dropped first, even
    one the loader did not create. `grant_select_to` names a role that gets CONNECT and SELECT
    (the least-privilege role macsql should use). `numeric_text` is `plan_tables`'s option.
    """
    started = time.perf_counter()
    path = Path(sqlite_path)
    if not path.is_file():
        raise LoaderError(f"SQLite database not found: {path}")
    name = database_name or path.stem
    if not name or len(name) > 63:
        raise LoaderError(f"not a usable PostgreSQL database name: {name!r}")
    admin_url = psycopg_url(pg_url)
    report = LoadReport(
        database=name,
        source=str(path),
        target=admin_url.set(database=name).render_as_string(hide_password=True),
    )
    marker = (
        f"{MARKER_PREFIX}{LOADER_VERSION}:{file_sha256(path)}:"
        f"{'numeric-text' if numeric_text else 'declared-text'}"
    )
    admin = _writable_engine(admin_url.set(database=admin_url.database or "postgres"))
    try:
        exists, comment = _database_marker(admin, name)
        if exists and comment == marker and not replace:
            if grant_select_to:  # the grants of a reload, for a role named only now
                _grant_select(admin_url.set(database=name), name, grant_select_to)
            report.skipped = True
            report.seconds = time.perf_counter() - started
            return report
        if exists:
            if not replace and not (comment or "").startswith(MARKER_PREFIX):
                raise LoaderError(
                    f"database {name!r} exists and was not created by the macsql loader; "
                    f"pass replace=True (--replace) to drop it"
                )
            with admin.connect() as conn:
                conn.exec_driver_sql(f"DROP DATABASE {quote_ident(name)} WITH (FORCE)")
        with admin.connect() as conn:
            conn.exec_driver_sql(
                f"CREATE DATABASE {quote_ident(name)} TEMPLATE template0 ENCODING 'UTF8' "
                f"LC_COLLATE 'C' LC_CTYPE 'C'"
            )
        # Ours from now on: a failed load is replaced by the next run.
        _set_marker(admin, name, f"{MARKER_PREFIX}{LOADER_VERSION}:loading")
        target = _writable_engine(admin_url.set(database=name))
        try:
            with target.connect() as conn, open_sqlite(path) as source:
                pg = conn.connection.driver_connection
                assert pg is not None  # a checked-out connection always has its driver's
                plans = plan_tables(source, report.warnings, numeric_text)
                for plan in plans:
                    report.tables[plan.name] = _load_table(pg, source, plan)
                _add_keys(pg, plans, report)
                with pg.cursor() as cur:
                    cur.execute("ANALYZE")
        finally:
            target.dispose()
        if grant_select_to:
            _grant_select(admin_url.set(database=name), name, grant_select_to)
        _set_marker(admin, name, marker)
    except DBAPIError as exc:
        raise LoaderError(f"loading {path.name} into {name!r} failed: {exc.orig}") from exc
    finally:
        admin.dispose()
    report.seconds = time.perf_counter() - started
    return report


def ensure_reader_role(pg_url: str | URL, role: str, password: str | None = None) -> bool:
    """Create `role` as a login role with no other attribute (macsql's least privilege: it
    gets SELECT grants from the loader and nothing else) when it does not exist; True when it
    was created. An existing role is left as it is."""
    admin_url = psycopg_url(pg_url)
    admin = _writable_engine(admin_url.set(database=admin_url.database or "postgres"))
    try:
        with admin.connect() as conn:
            exists = conn.execute(
                text("SELECT 1 FROM pg_roles WHERE rolname = :role"), {"role": role}
            ).first()
            if exists:
                return False
            pg = conn.connection.driver_connection
            assert pg is not None
            with pg.cursor() as cur:
                cur.execute(
                    "SELECT format('CREATE ROLE %I LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE "
                    "NOREPLICATION NOBYPASSRLS' || CASE WHEN %s::text IS NULL THEN '' "
                    "ELSE format(' PASSWORD %L', %s::text) END, %s::text)",
                    (password, password, role),
                )
                statement = cur.fetchone()
                assert statement is not None
                cur.execute(statement[0])
            return True
    finally:
        admin.dispose()


def _grant_select(url: URL, name: str, role: str) -> None:
    """The read-only role's grants (see docs/safety.md): CONNECT on the database, USAGE on
    `public`, SELECT on its tables; nothing that writes. Idempotent."""
    engine = _writable_engine(url)
    try:
        with engine.connect() as conn:
            quoted = quote_ident(role)
            conn.exec_driver_sql(f"GRANT CONNECT ON DATABASE {quote_ident(name)} TO {quoted}")
            conn.exec_driver_sql(f"GRANT USAGE ON SCHEMA public TO {quoted}")
            conn.exec_driver_sql(f"GRANT SELECT ON ALL TABLES IN SCHEMA public TO {quoted}")
    finally:
        engine.dispose()


def load_spider_databases(
    spider_dir: str | Path,
    pg_admin_url: str | URL,
    db_ids: Sequence[str] = DEFAULT_SPIDER_DATABASES,
    *,
    replace: bool = False,
    grant_select_to: str | None = None,
    numeric_text: bool = True,
) -> list[LoadReport]:
    """Load Spider databases (`<spider_dir>/database/<id>/<id>.sqlite`), one PG database each."""
    return [
        copy_sqlite_to_postgres(
            source,
            pg_admin_url,
            db_id,
            replace=replace,
            grant_select_to=grant_select_to,
            numeric_text=numeric_text,
        )
        for source, db_id in sqlite_sources(spider_dir, db_ids)
    ]
