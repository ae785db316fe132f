"""Copy SQLite databases (Spider's, BIRD's) into MySQL or MariaDB, one database each.

Column types follow the data, as in the PostgreSQL loader (`plan_tables` is shared); text is
`LONGTEXT` in `utf8mb4_bin`, so comparisons and ORDER BY are byte-wise and case-sensitive like
SQLite's BINARY collation. Primary keys are declared when the data satisfies them and no key
column is text (MySQL cannot key a LONGTEXT); foreign keys are declared unchecked where InnoDB
can hold them. A loaded database
is recorded in `macsql_loader.loaded` with the source file's sha256: a database already loaded
from the same file is skipped, and one the loader did not create is never dropped unless
`replace=True`. The server should match table names case-insensitively
(`lower_case_table_names=1`, as `scripts/ci_mariadb.sh` starts it), as SQLite does.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from sqlalchemy import create_engine
from sqlalchemy.engine import make_url
from sqlalchemy.exc import DBAPIError
from sqlalchemy.pool import NullPool

from macsql.database.connection_errors import describe_database_error
from macsql.database.drivers import normalise_url
from macsql.database.loaders.plan import (
    LOADER_VERSION,
    MARKER_PREFIX,
    LoaderError,
    LoadReport,
    TablePlan,
    file_sha256,
    key_holds,
    open_sqlite,
    plan_tables,
    source_rows,
    sqlite_sources,
)

# Every integer column is BIGINT: InnoDB keys need equal types on both sides, and the PostgreSQL
# plan may give a key INTEGER and the column referring to it BIGINT.
_MYSQL_TYPES = {
    "integer": "BIGINT",
    "bigint": "BIGINT",
    "double precision": "DOUBLE",
    "numeric": "DOUBLE",
    "bytea": "LONGBLOB",
    "text": "LONGTEXT",
}
_INSERT_BATCH = 500
_BOOK = "macsql_loader"


def quote_mysql(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def _grantee(user: str) -> str:
    name, _, host = user.partition("@")
    return f"'{name.replace(chr(39), '')}'@'{(host or '%').replace(chr(39), '')}'"


def ensure_reader_user(url: str, user: str, password: str | None = None) -> bool:
    """Create `user` (`name@host`, host `%` by default) with no privilege, for the loader's
    SELECT grants, when it does not exist; True when it was created."""
    import pymysql

    name, _, host = user.partition("@")
    try:
        with _admin_cursor(url) as cur:
            cur.execute(
                "SELECT 1 FROM mysql.user WHERE user = %s AND host = %s", (name, host or "%")
            )
            if cur.fetchone() is not None:
                return False
            if password is None:
                cur.execute(f"CREATE USER {_grantee(user)}")
            else:
                cur.execute(f"CREATE USER {_grantee(user)} IDENTIFIED BY %s", (password,))
            return True
    except pymysql.MySQLError as exc:
        raise LoaderError(f"creating the user {user} failed: {exc}") from exc


@contextmanager
def _admin_cursor(url: str) -> Iterator[Any]:
    """An autocommit cursor of a writable connection for loading (never for model SQL), no
    database selected; the engine is disposed afterwards."""
    engine = create_engine(make_url(normalise_url(url)).set(database=None), poolclass=NullPool)
    try:
        with engine.connect() as conn:
            raw: Any = conn.connection.driver_connection
            raw.autocommit(True)
            with raw.cursor() as cur:
                yield cur
    finally:
        engine.dispose()


def _create_table(cur: Any, source: Any, plan: TablePlan, report: LoadReport) -> None:
    parts = [
        f"{quote_mysql(c.name)} {_MYSQL_TYPES[c.pg_type]}{' NOT NULL' if c.not_null else ''}"
        for c in plan.columns
    ]
    types = {c.name: c.pg_type for c in plan.columns}
    if plan.primary_key:
        keyable = all(types[name] not in ("text", "bytea") for name in plan.primary_key)
        if keyable and key_holds(source, plan):
            parts.append(f"PRIMARY KEY ({', '.join(quote_mysql(c) for c in plan.primary_key)})")
            report.primary_keys += 1
        else:
            report.warnings.append(f"{plan.name}: primary key skipped (text key or violated)")
    cur.execute(
        f"CREATE TABLE {quote_mysql(plan.name)} ({', '.join(parts)}) "
        f"ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin"
    )
    marks = f"({', '.join('%s' for _ in plan.columns)})"
    insert = f"INSERT INTO {quote_mysql(plan.name)} VALUES "
    batch: list[tuple[Any, ...]] = []
    count = 0
    for row in [*source_rows(source, plan), None]:
        if row is not None:
            batch.append(row)
        if batch and (row is None or len(batch) >= _INSERT_BATCH):
            cur.execute(insert + ", ".join(marks for _ in batch), [v for r in batch for v in r])
            count += len(batch)
            batch = []
    report.tables[plan.name] = count


def _add_foreign_keys(cur: Any, plans: list[TablePlan], report: LoadReport) -> None:
    """Declare the SQLite file's foreign keys, for the schema shown to the model. With
    `foreign_key_checks = 0` InnoDB takes a key that existing rows break (SQLite never checked
    them); one it still refuses (no key on the referenced columns, other types) is a warning."""
    import pymysql

    tables = {plan.name: plan for plan in plans}
    cur.execute("SET SESSION foreign_key_checks = 0")
    try:
        for plan in plans:
            for number, (cols, ref_table, ref_cols) in enumerate(plan.foreign_keys, start=1):
                target = tables.get(ref_table)
                resolved = ref_cols if all(ref_cols) else (target.primary_key if target else [])
                link = f"{plan.name}({', '.join(cols)}) -> {ref_table}"
                if target is None or len(resolved) != len(cols):
                    report.warnings.append(f"foreign key {link} skipped: unknown target")
                    continue
                try:
                    cur.execute(
                        f"ALTER TABLE {quote_mysql(plan.name)} ADD CONSTRAINT "
                        f"{quote_mysql(f'fk_{plan.name}_{number}'[:64])} FOREIGN KEY "
                        f"({', '.join(quote_mysql(c) for c in cols)}) REFERENCES "
                        f"{quote_mysql(ref_table)} ({', '.join(quote_mysql(c) for c in resolved)})"
                    )
                    report.foreign_keys += 1
                except pymysql.MySQLError as exc:
                    report.warnings.append(f"foreign key {link} skipped: {exc.args[-1]}")
    finally:
        cur.execute("SET SESSION foreign_key_checks = 1")


def copy_sqlite_to_mysql(
    sqlite_path: str | Path,
    url: str,
    database_name: str | None = None,
    *,
    replace: bool = False,
    grant_select_to: str | None = None,
    numeric_text: bool = True,
) -> LoadReport:
    """Copy one SQLite file into its own MySQL/MariaDB database (created or replaced)."""
    import pymysql

    started = time.perf_counter()
    path = Path(sqlite_path)
    if not path.is_file():
        raise LoaderError(f"SQLite database not found: {path}")
    name = database_name or path.stem
    target = make_url(normalise_url(url)).set(database=name)
    report = LoadReport(
        database=name, source=str(path), target=target.render_as_string(hide_password=True)
    )
    marker = (
        f"{MARKER_PREFIX}{LOADER_VERSION}:{file_sha256(path)}:"
        f"{'numeric-text' if numeric_text else 'declared-text'}:mysql-v2"
    )
    try:
        with _admin_cursor(url) as cur:
            cur.execute(f"CREATE DATABASE IF NOT EXISTS {_BOOK}")
            cur.execute(
                f"CREATE TABLE IF NOT EXISTS {_BOOK}.loaded "
                "(name VARCHAR(64) PRIMARY KEY, marker VARCHAR(255))"
            )
            cur.execute(f"SELECT marker FROM {_BOOK}.loaded WHERE name = %s", (name,))
            found = cur.fetchone()
            cur.execute("SELECT 1 FROM information_schema.schemata WHERE schema_name = %s", (name,))
            exists = cur.fetchone() is not None
            if exists and found and found[0] == marker and not replace:
                if grant_select_to:  # the grant of a reload, for a user named only now
                    cur.execute(
                        f"GRANT SELECT ON {quote_mysql(name)}.* TO {_grantee(grant_select_to)}"
                    )
                report.skipped = True
                return report
            if exists and not found and not replace:
                raise LoaderError(
                    f"database {name!r} exists and was not created by the macsql loader; "
                    f"pass --replace to drop it"
                )
            cur.execute(f"DROP DATABASE IF EXISTS {quote_mysql(name)}")
            cur.execute(f"REPLACE INTO {_BOOK}.loaded VALUES (%s, %s)", (name, "loading"))
            cur.execute(
                f"CREATE DATABASE {quote_mysql(name)} CHARACTER SET utf8mb4 COLLATE utf8mb4_bin"
            )
            cur.execute(f"USE {quote_mysql(name)}")
            with open_sqlite(path) as source:
                plans = plan_tables(source, report.warnings, numeric_text)
                for plan in plans:
                    _create_table(cur, source, plan, report)
            _add_foreign_keys(cur, plans, report)
            if grant_select_to:
                cur.execute(f"GRANT SELECT ON {quote_mysql(name)}.* TO {_grantee(grant_select_to)}")
            cur.execute(f"REPLACE INTO {_BOOK}.loaded VALUES (%s, %s)", (name, marker))
    except (pymysql.MySQLError, DBAPIError) as exc:
        # Connecting goes through SQLAlchemy (its OperationalError wraps PyMySQL's).
        raise LoaderError(
            f"loading {path.name} into {report.target} failed: {describe_database_error(exc)}"
        ) from exc
    finally:
        report.seconds = time.perf_counter() - started
    return report


def load_into_mysql(
    spider_dir: str | Path,
    url: str,
    db_ids: Sequence[str],
    sqlite_files: Sequence[str] = (),
    *,
    replace: bool = False,
    grant_select_to: str | None = None,
    numeric_text: bool = True,
) -> list[LoadReport]:
    """Load Spider databases by id, and other SQLite files by path, into MySQL/MariaDB."""
    return [
        copy_sqlite_to_mysql(
            source,
            url,
            replace=replace,
            grant_select_to=grant_select_to,
            numeric_text=numeric_text,
        )
        for source, _ in sqlite_sources(spider_dir, db_ids, sqlite_files)
    ]
