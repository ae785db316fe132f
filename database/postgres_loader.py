"""Copy SQLite databases (Spider's, or any other) into PostgreSQL.

macsql tests PostgreSQL as a real server. This loader gives it real data: each SQLite file
becomes one PostgreSQL *database* of the same name (for example `concert_singer`), with its
tables in `public`, so the unqualified table names of Spider's SQL work unchanged.

Choices, and why:

- **Names are folded to lower case** (and always quoted when created). PostgreSQL folds unquoted
  identifiers to lower case, so `SELECT Name FROM singer` only finds a column created as `name`.
  SQLite's names are case-insensitive, so nothing is lost; a clash after folding gets a suffix.
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
- **Idempotent.** The database carries a comment `macsql-loader:v1:<sha256 of the file>`; a
  database already loaded from the same file is skipped, one loaded from another version of it
  is replaced, and a database that the loader did not create is never dropped unless
  `replace=True`.

The loader needs a role that may create databases. It writes through its own engine, created
here with AUTOCOMMIT; macsql's pooled engines (`macsql.database.connection`) stay read-only.

Command line (the `macsql load-postgres` subcommand calls `main_load`):

    python -m macsql.database.postgres_loader --admin-url postgresql+psycopg://u:p@host/postgres \
        --spider-dir ../shared/data/spider concert_singer pets_1
"""

from __future__ import annotations

import argparse
import hashlib
import math
import os
import sqlite3
import sys
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sqlalchemy import create_engine, text
from sqlalchemy.engine import URL, Engine, make_url
from sqlalchemy.exc import DBAPIError
from sqlalchemy.pool import NullPool

MARKER_PREFIX = "macsql-loader:v1:"
"""The start of the database comment that marks a database this loader created."""

DEFAULT_SPIDER_DATABASES: tuple[str, ...] = (
    "concert_singer",
    "pets_1",
    "car_1",
    "flight_2",
    "world_1",
)
"""The Spider dev databases loaded by default (CI loads these)."""

_COPY_BATCH = 5000
_INT32 = 2**31 - 1


class LoaderError(RuntimeError):
    """The loader cannot do what was asked (missing file, foreign database in the way, ...)."""


@dataclass
class ColumnPlan:
    """How one SQLite column is created in PostgreSQL."""

    source: str
    name: str
    declared: str
    pg_type: str
    not_null: bool = False


@dataclass
class TablePlan:
    source: str
    name: str
    columns: list[ColumnPlan]
    primary_key: list[str]
    foreign_keys: list[tuple[list[str], str, list[str]]]


@dataclass
class LoadReport:
    """What `copy_sqlite_to_postgres` did for one database."""

    database: str
    source: str
    skipped: bool = False
    tables: dict[str, int] = field(default_factory=dict)
    primary_keys: int = 0
    foreign_keys: int = 0
    warnings: list[str] = field(default_factory=list)
    seconds: float = 0.0

    def summary(self) -> str:
        if self.skipped:
            return f"{self.database}: already loaded from this file, skipped"
        rows = sum(self.tables.values())
        text_ = (
            f"{self.database}: {len(self.tables)} tables, {rows} rows, {self.primary_keys} "
            f"primary keys, {self.foreign_keys} foreign keys in {self.seconds:.2f}s"
        )
        if self.warnings:
            text_ += f" ({len(self.warnings)} warnings)"
        return text_


# --- URLs and engines ------------------------------------------------------------------------


def _psycopg_url(url: str | URL) -> URL:
    parsed = make_url(url)
    if parsed.get_backend_name() not in ("postgresql", "postgres"):
        raise LoaderError(f"not a PostgreSQL URL: {parsed.render_as_string(hide_password=True)}")
    if parsed.drivername in ("postgresql", "postgres"):
        parsed = parsed.set(drivername="postgresql+psycopg")
    return parsed


def database_url(pg_url: str | URL, database: str) -> str:
    """`pg_url` pointing at `database` instead (password kept), as a string for `--db`."""
    return _psycopg_url(pg_url).set(database=database).render_as_string(hide_password=False)


def _writable_engine(url: URL) -> Engine:
    # Its own engine, never the pooled read-only one; AUTOCOMMIT so each DDL stands alone and
    # CREATE/DROP DATABASE can run.
    return create_engine(url, isolation_level="AUTOCOMMIT", poolclass=NullPool)


def quote_ident(name: str) -> str:
    """A PostgreSQL identifier, always quoted."""
    return '"' + name.replace("\x00", "").replace('"', '""') + '"'


def _sqlite_quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


# --- reading and planning ---------------------------------------------------------------------


def _open_sqlite(path: Path) -> sqlite3.Connection:
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    # Spider has a few cells that are not valid UTF-8; keep them, with replacement characters.
    conn.text_factory = lambda raw: raw.decode("utf-8", errors="replace")
    return conn


def _affinity(declared: str) -> str:
    """SQLite's type affinity rules (section 3.1 of its datatype page)."""
    upper = declared.upper()
    if "INT" in upper:
        return "integer"
    if any(word in upper for word in ("CHAR", "CLOB", "TEXT")):
        return "text"
    if not upper or "BLOB" in upper:
        return "blob"
    if any(word in upper for word in ("REAL", "FLOA", "DOUB")):
        return "real"
    return "numeric"


def _decimal_declared(declared: str) -> bool:
    upper = declared.upper()
    return "DEC" in upper or "NUMERIC" in upper or "MONEY" in upper


def _choose_type(declared: str, counts: dict[str, int], low: Any, high: Any) -> str:
    kinds = {kind for kind, count in counts.items() if count}
    affinity = _affinity(declared)
    if not kinds:
        return {
            "integer": "bigint",
            "real": "double precision",
            "numeric": "numeric",
            "text": "text",
            "blob": "text",
        }[affinity]
    if kinds == {"blob"}:
        return "bytea"
    if kinds & {"text", "blob"}:
        return "text"
    if kinds == {"integer"} and affinity != "real" and not _decimal_declared(declared):
        fits = low is not None and high is not None and -_INT32 - 1 <= low and high <= _INT32
        return "integer" if fits else "bigint"
    if _decimal_declared(declared):
        return "numeric"
    return "double precision"


def _unique_name(name: str, taken: set[str], warnings: list[str], what: str) -> str:
    folded = name.lower().replace("\x00", "")
    candidate, n = folded, 2
    while candidate in taken:
        candidate = f"{folded}_{n}"
        n += 1
    if candidate != folded:
        warnings.append(f"{what} {name!r} renamed to {candidate!r} (clash after lower-casing)")
    taken.add(candidate)
    return candidate


def plan_tables(conn: sqlite3.Connection, warnings: list[str]) -> list[TablePlan]:
    """Read the SQLite schema and data types; decide each PostgreSQL table."""
    names = [
        row[0]
        for row in conn.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' "
            "ORDER BY rowid"
        )
    ]
    views = conn.execute("SELECT count(*) FROM sqlite_master WHERE type = 'view'").fetchone()[0]
    if views:
        warnings.append(f"{views} view(s) not copied")
    taken_tables: set[str] = set()
    plans: list[TablePlan] = []
    for source in names:
        table = _unique_name(source, taken_tables, warnings, "table")
        info = conn.execute(f"PRAGMA table_info({_sqlite_quote(source)})").fetchall()
        probes = []
        for _cid, column, *_ in info:
            q = _sqlite_quote(column)
            probes.append(
                f"sum(typeof({q}) = 'integer'), sum(typeof({q}) = 'real'), "
                f"sum(typeof({q}) = 'text'), sum(typeof({q}) = 'blob'), "
                f"min(CASE WHEN typeof({q}) = 'integer' THEN {q} END), "
                f"max(CASE WHEN typeof({q}) = 'integer' THEN {q} END), "
                f"sum({q} IS NULL)"
            )
        stats = (
            conn.execute(f"SELECT {', '.join(probes)} FROM {_sqlite_quote(source)}").fetchone()
            if probes
            else ()
        )
        taken_columns: set[str] = set()
        columns: list[ColumnPlan] = []
        by_source: dict[str, str] = {}
        pk: list[tuple[int, str]] = []
        for index, (_cid, column, declared, notnull, _default, pk_pos) in enumerate(info):
            ints, reals, texts, blobs, low, high, nulls = stats[index * 7 : index * 7 + 7]
            counts = {
                "integer": ints or 0,
                "real": reals or 0,
                "text": texts or 0,
                "blob": blobs or 0,
            }
            name = _unique_name(column, taken_columns, warnings, f"column {source}.")
            pg_type = _choose_type(declared or "", counts, low, high)
            if counts["text"] and _affinity(declared or "") in ("integer", "real", "numeric"):
                warnings.append(
                    f"{source}.{column}: declared {declared or 'untyped'} but holds text; "
                    f"loaded as text"
                )
            columns.append(
                ColumnPlan(column, name, declared or "", pg_type, bool(notnull) and not nulls)
            )
            by_source[column.lower()] = name
            if pk_pos:
                pk.append((pk_pos, name))
        fks: dict[int, tuple[list[str], str, list[str | None]]] = {}
        for fk_id, _seq, ref_table, from_col, to_col, *_ in conn.execute(
            f"PRAGMA foreign_key_list({_sqlite_quote(source)})"
        ):
            entry = fks.setdefault(fk_id, ([], ref_table, []))
            entry[0].append(by_source.get(from_col.lower(), from_col.lower()))
            entry[2].append(to_col.lower() if to_col else None)
        plans.append(
            TablePlan(
                source=source,
                name=table,
                columns=columns,
                primary_key=[name for _, name in sorted(pk)],
                foreign_keys=[
                    (cols, ref.lower(), [c or "" for c in ref_cols])
                    for cols, ref, ref_cols in fks.values()
                ],
            )
        )
    return plans


# --- writing -----------------------------------------------------------------------------------


def _convert(value: Any, pg_type: str) -> Any:
    if value is None:
        return None
    if pg_type == "text":
        if isinstance(value, bytes):
            value = value.decode("utf-8", errors="replace")
        elif isinstance(value, float):
            value = repr(value) if math.isfinite(value) else str(value)
        return str(value).replace("\x00", "")
    if pg_type == "bytea":
        return bytes(value)
    if pg_type in ("double precision", "numeric") and isinstance(value, float):
        return value if math.isfinite(value) else ("Infinity" if value > 0 else "-Infinity")
    return value


def _rows(conn: sqlite3.Connection, plan: TablePlan) -> Iterator[tuple[Any, ...]]:
    select = ", ".join(_sqlite_quote(c.source) for c in plan.columns)
    cursor = conn.execute(f"SELECT {select} FROM {_sqlite_quote(plan.source)}")
    types = [c.pg_type for c in plan.columns]
    while batch := cursor.fetchmany(_COPY_BATCH):
        for row in batch:
            yield tuple(_convert(v, t) for v, t in zip(row, types, strict=True))


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
            for row in _rows(sqlite_conn, plan):
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
        cols = ", ".join(quote_ident(c) for c in plan.primary_key)
        error = _try_ddl(pg, f"ALTER TABLE {quote_ident(plan.name)} ADD PRIMARY KEY ({cols})")
        if error:
            report.warnings.append(f"primary key of {plan.name} ({cols}) skipped: {error}")
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
            resolved = (
                ref_cols if all(ref_cols) else primary.get(ref_table, target.primary_key)
            )
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
) -> LoadReport:
    """Copy one SQLite file into its own PostgreSQL database (created if missing).

    `pg_url` names any database on the server that the role may connect to (the maintenance
    database `postgres` is usual); the role needs CREATEDB. `database_name` defaults to the
    file's stem. With `replace=True` an existing database of that name is dropped first, even
    one the loader did not create. `grant_select_to` names a role that gets CONNECT and SELECT
    (the least-privilege role macsql should use).
    """
    started = time.perf_counter()
    path = Path(sqlite_path)
    if not path.is_file():
        raise LoaderError(f"SQLite database not found: {path}")
    name = database_name or path.stem
    if not name or len(name) > 63:
        raise LoaderError(f"not a usable PostgreSQL database name: {name!r}")
    report = LoadReport(database=name, source=str(path))
    marker = MARKER_PREFIX + file_sha256(path)
    admin_url = _psycopg_url(pg_url)
    admin = _writable_engine(admin_url.set(database=admin_url.database or "postgres"))
    try:
        exists, comment = _database_marker(admin, name)
        if exists and comment == marker and not replace:
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
        _set_marker(admin, name, MARKER_PREFIX + "loading")
        target = _writable_engine(admin_url.set(database=name))
        try:
            with target.connect() as conn, _open_sqlite(path) as source:
                pg = conn.connection.driver_connection
                plans = plan_tables(source, report.warnings)
                for plan in plans:
                    report.tables[plan.name] = _load_table(pg, source, plan)
                _add_keys(pg, plans, report)
                with pg.cursor() as cur:
                    cur.execute("ANALYZE")
                    if grant_select_to:
                        role = quote_ident(grant_select_to)
                        cur.execute(f"GRANT CONNECT ON DATABASE {quote_ident(name)} TO {role}")
                        cur.execute(f"GRANT USAGE ON SCHEMA public TO {role}")
                        cur.execute(f"GRANT SELECT ON ALL TABLES IN SCHEMA public TO {role}")
        finally:
            target.dispose()
        _set_marker(admin, name, marker)
    except DBAPIError as exc:
        raise LoaderError(f"loading {path.name} into {name!r} failed: {exc.orig}") from exc
    finally:
        admin.dispose()
    report.seconds = time.perf_counter() - started
    return report


def spider_sqlite_path(spider_dir: str | Path, db_id: str) -> Path:
    return Path(spider_dir) / "database" / db_id / f"{db_id}.sqlite"


def load_spider_databases(
    spider_dir: str | Path,
    pg_admin_url: str | URL,
    db_ids: Sequence[str] = DEFAULT_SPIDER_DATABASES,
    *,
    replace: bool = False,
    grant_select_to: str | None = None,
) -> list[LoadReport]:
    """Load Spider databases (`<spider_dir>/database/<id>/<id>.sqlite`), one PG database each."""
    missing = [db_id for db_id in db_ids if not spider_sqlite_path(spider_dir, db_id).is_file()]
    if missing:
        raise LoaderError(f"Spider databases not found under {spider_dir}: {', '.join(missing)}")
    return [
        copy_sqlite_to_postgres(
            spider_sqlite_path(spider_dir, db_id),
            pg_admin_url,
            db_id,
            replace=replace,
            grant_select_to=grant_select_to,
        )
        for db_id in db_ids
    ]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="macsql load-postgres",
        description="Copy Spider (or any) SQLite databases into PostgreSQL, one database each.",
    )
    parser.add_argument(
        "db_ids",
        nargs="*",
        help=f"Spider database ids (default: {' '.join(DEFAULT_SPIDER_DATABASES)})",
    )
    parser.add_argument(
        "--admin-url",
        default=os.environ.get("MACSQL_PG_URL"),
        help="SQLAlchemy URL of the server's maintenance database, with a role that may "
        "create databases (default: $MACSQL_PG_URL)",
    )
    parser.add_argument(
        "--spider-dir",
        default=os.environ.get("MACSQL_SPIDER_DIR", "../shared/data/spider"),
        help="Spider's folder, holding database/<id>/<id>.sqlite (default: $MACSQL_SPIDER_DIR "
        "or ../shared/data/spider)",
    )
    parser.add_argument(
        "--sqlite", action="append", default=[], metavar="PATH",
        help="also load this SQLite file (database named after the file); repeatable",
    )
    parser.add_argument("--replace", action="store_true", help="drop and reload existing ones")
    parser.add_argument("--grant-select-to", metavar="ROLE", help="role given read access")
    parser.add_argument("--verbose", "-v", action="store_true", help="print every warning")
    return parser


def main_load(argv: Sequence[str] | None = None) -> int:
    """Entry point of `macsql load-postgres` (and `python -m macsql.database.postgres_loader`).

    Returns the process exit status: 0 on success, 2 on a usage or loading error.
    """
    args = build_parser().parse_args(argv)
    if not args.admin_url:
        print("error: no --admin-url and MACSQL_PG_URL is not set", file=sys.stderr)
        return 2
    db_ids = args.db_ids or ([] if args.sqlite else list(DEFAULT_SPIDER_DATABASES))
    try:
        reports = load_spider_databases(
            args.spider_dir, args.admin_url, db_ids,
            replace=args.replace, grant_select_to=args.grant_select_to,
        )
        reports += [
            copy_sqlite_to_postgres(
                path, args.admin_url, replace=args.replace, grant_select_to=args.grant_select_to
            )
            for path in args.sqlite
        ]
    except LoaderError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    for report in reports:
        print(report.summary())
        if args.verbose:
            for warning in report.warnings:
                print(f"  warning: {warning}")
    return 0


if __name__ == "__main__":
    sys.exit(main_load())
