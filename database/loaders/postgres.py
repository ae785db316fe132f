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

Command line (the `macsql load-postgres` subcommand calls `main_load`):

    python -m macsql.database.loaders.postgres --admin-url postgresql+psycopg://u:p@host/postgres \
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
import traceback
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sqlalchemy import create_engine, text
from sqlalchemy.engine import URL, Engine, make_url
from sqlalchemy.exc import DBAPIError
from sqlalchemy.pool import NullPool

MARKER_PREFIX = "macsql-loader:"
"""The start of the database comment that marks a database this loader created."""

LOADER_VERSION = "v2"
"""Part of the marker: a database loaded by an older loader is reloaded."""

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
    integer_text: bool = False
    """Every non-NULL value is an integer or the text of one (such as '12')."""


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
    target: str = ""
    """Where it was written: a file, or the database's URL with its password hidden."""
    skipped: bool = False
    tables: dict[str, int] = field(default_factory=dict)
    primary_keys: int = 0
    foreign_keys: int = 0
    warnings: list[str] = field(default_factory=list)
    seconds: float = 0.0

    def summary(self) -> str:
        where = f" -> {self.target}" if self.target else ""
        if self.skipped:
            return f"{self.database}{where}: already loaded from this file, skipped"
        rows = sum(self.tables.values())
        text_ = (
            f"{self.database}{where}: {len(self.tables)} tables, {rows} rows, "
            f"{self.primary_keys} primary keys, {self.foreign_keys} foreign keys in "
            f"{self.seconds:.2f}s"
        )
        if self.warnings:
            text_ += f" ({len(self.warnings)} warnings)"
        return text_


# --- URLs and engines ------------------------------------------------------------------------


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


@dataclass(frozen=True)
class ColumnStats:
    """What the values of one SQLite column are (SQLite's `typeof`), counted in one pass."""

    integers: int = 0
    reals: int = 0
    texts: int = 0
    blobs: int = 0
    nulls: int = 0
    low: int | None = None
    high: int | None = None
    integer_texts: int = 0
    """Texts that are an integer written canonically, such as '2014' (not '02014' or '1e3')."""
    real_texts: int = 0
    """Texts that are a real written as SQLite writes it, such as '18.5'."""

    @property
    def numeric_texts_only(self) -> bool:
        return self.texts > 0 and self.texts == self.integer_texts + self.real_texts

    @property
    def integer_texts_only(self) -> bool:
        return self.texts > 0 and self.texts == self.integer_texts


def _stats_sql(column: str) -> str:
    q = _sqlite_quote(column)
    return (
        f"sum(typeof({q}) = 'integer'), sum(typeof({q}) = 'real'), "
        f"sum(typeof({q}) = 'text'), sum(typeof({q}) = 'blob'), sum({q} IS NULL), "
        f"min(CASE WHEN typeof({q}) = 'integer' THEN {q} END), "
        f"max(CASE WHEN typeof({q}) = 'integer' THEN {q} END), "
        f"sum(typeof({q}) = 'text' AND CAST(CAST({q} AS INTEGER) AS TEXT) = {q}), "
        f"sum(typeof({q}) = 'text' AND CAST(CAST({q} AS REAL) AS TEXT) = {q})"
    )


_PROBES = 9  # values selected per column by `_stats_sql`


def choose_type(declared: str, stats: ColumnStats, numeric_text: bool = True) -> str:
    """The PostgreSQL type of a SQLite column with this declared type and these values."""
    affinity = _affinity(declared)
    decimal = _decimal_declared(declared)
    if not (stats.integers or stats.reals or stats.texts or stats.blobs):
        return {
            "integer": "bigint",
            "real": "double precision",
            "numeric": "numeric" if decimal else "double precision",
            "text": "text",
            "blob": "text",
        }[affinity]
    if stats.blobs:
        return "bytea" if not (stats.integers or stats.reals or stats.texts) else "text"
    if stats.texts and not (numeric_text and stats.numeric_texts_only):
        return "text"
    if not stats.reals and not stats.real_texts and affinity != "real" and not decimal:
        if stats.texts:  # integers written as text: their range is unknown here
            return "bigint"
        low, high = stats.low, stats.high
        fits = low is not None and high is not None and low >= -_INT32 - 1 and high <= _INT32
        return "integer" if fits else "bigint"
    return "numeric" if decimal else "double precision"


_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")


def fold_identifier(name: str) -> str:
    """What PostgreSQL makes of an unquoted name: ASCII letters lower-cased, nothing else.

    SQLite's names are case-insensitive for ASCII letters only, so no two SQLite names fold to
    the same PostgreSQL name.
    """
    return name.translate(_ASCII_LOWER)


def _unique_name(name: str, taken: set[str], warnings: list[str], what: str) -> str:
    folded = fold_identifier(name).replace("\x00", "")
    candidate, n = folded, 2
    while candidate in taken:
        candidate = f"{folded}_{n}"
        n += 1
    if candidate != folded:
        warnings.append(f"{what} {name!r} renamed to {candidate!r} (clash after lower-casing)")
    taken.add(candidate)
    return candidate


def plan_tables(
    conn: sqlite3.Connection, warnings: list[str], numeric_text: bool = True
) -> list[TablePlan]:
    """Read the SQLite schema and data types; decide each PostgreSQL table.

    With `numeric_text`, a column whose every value is a number, some written as text
    (`'2014'`, `'18.5'`), becomes numeric: SQLite compares such text with numbers as numbers,
    PostgreSQL has no `text = integer` operator, and Spider's SQL relies on the former.
    """
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
        probes = [_stats_sql(column) for _cid, column, *_ in info]
        values = (
            conn.execute(f"SELECT {', '.join(probes)} FROM {_sqlite_quote(source)}").fetchone()
            if probes
            else ()
        )
        taken_columns: set[str] = set()
        columns: list[ColumnPlan] = []
        by_source: dict[str, str] = {}
        pk: list[tuple[int, str]] = []
        for index, (_cid, column, declared, notnull, _default, pk_pos) in enumerate(info):
            ints, reals, texts, blobs, nulls, low, high, int_texts, real_texts = values[
                index * _PROBES : index * _PROBES + _PROBES
            ]
            stats = ColumnStats(
                ints or 0,
                reals or 0,
                texts or 0,
                blobs or 0,
                nulls or 0,
                low,
                high,
                int_texts or 0,
                real_texts or 0,
            )
            name = _unique_name(column, taken_columns, warnings, f"column {source}.")
            pg_type = choose_type(declared or "", stats, numeric_text)
            if stats.texts and pg_type != "text":
                warnings.append(f"{source}.{column}: numbers stored as text; loaded as {pg_type}")
            elif stats.texts and _affinity(declared or "") in ("integer", "real", "numeric"):
                warnings.append(
                    f"{source}.{column}: declared {declared or 'untyped'} but holds text; "
                    f"loaded as text"
                )
            columns.append(
                ColumnPlan(
                    column,
                    name,
                    declared or "",
                    pg_type,
                    bool(notnull) and not nulls,
                    integer_text=stats.integer_texts_only and not reals and not blobs,
                )
            )
            by_source[fold_identifier(column)] = name
            if pk_pos:
                pk.append((pk_pos, name))
        fks: dict[int, tuple[list[str], str, list[str | None]]] = {}
        for fk_id, _seq, ref_table, from_col, to_col, *_ in conn.execute(
            f"PRAGMA foreign_key_list({_sqlite_quote(source)})"
        ):
            entry = fks.setdefault(fk_id, ([], ref_table, []))
            entry[0].append(by_source.get(fold_identifier(from_col), fold_identifier(from_col)))
            entry[2].append(fold_identifier(to_col) if to_col else None)
        plans.append(
            TablePlan(
                source=source,
                name=table,
                columns=columns,
                primary_key=[name for _, name in sorted(pk)],
                foreign_keys=[
                    (cols, fold_identifier(ref), [c or "" for c in ref_cols])
                    for cols, ref, ref_cols in fks.values()
                ],
            )
        )
    _align_key_types(plans, warnings)
    return plans


def _align_key_types(plans: list[TablePlan], warnings: list[str]) -> None:
    """Give both ends of a foreign key an integer type when the text end holds integers.

    Spider often declares `concert.stadium_id text` against `stadium.stadium_id int`. SQLite
    compares them numerically, so joins work there; PostgreSQL has no `text = integer`
    operator. Turning the text end into integers (only when every value is the text of an
    integer) keeps the gold joins valid and lets the foreign key exist.
    """
    columns = {(p.name, c.name): (p.source, c) for p in plans for c in p.columns}
    primary = {p.name: p.primary_key for p in plans}
    integers = ("integer", "bigint")
    for plan in plans:
        for cols, ref_table, ref_cols in plan.foreign_keys:
            targets = ref_cols if all(ref_cols) else primary.get(ref_table, [])
            for col, ref_col in zip(cols, targets, strict=False):
                here = columns.get((plan.name, col))
                there = columns.get((ref_table, ref_col))
                if here is None or there is None or here[1].pg_type == there[1].pg_type:
                    continue
                for (table, text_end), (_, int_end) in ((here, there), (there, here)):
                    if (
                        text_end.pg_type == "text"
                        and text_end.integer_text
                        and int_end.pg_type in integers
                    ):
                        text_end.pg_type = "bigint"
                        int_end.pg_type = "bigint"
                        warnings.append(
                            f"{table}.{text_end.source} holds integers as text; loaded as bigint "
                            f"to match its foreign key"
                        )


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
    if pg_type in ("integer", "bigint") and isinstance(value, str):
        return int(value)
    if pg_type == "bytea":
        return bytes(value)
    if pg_type in ("double precision", "numeric") and isinstance(value, str):
        return float(value)
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
            with target.connect() as conn, _open_sqlite(path) as source:
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


def spider_sqlite_path(spider_dir: str | Path, db_id: str) -> Path:
    return Path(spider_dir) / "database" / db_id / f"{db_id}.sqlite"


def sqlite_sources(
    spider_dir: str | Path, db_ids: Sequence[str], sqlite_files: Sequence[str] = ()
) -> list[tuple[Path, str]]:
    """(file, database name) for Spider databases by id, then other SQLite files by path (named
    by their stem); a missing Spider database stops the load before anything is copied."""
    missing = [db_id for db_id in db_ids if not spider_sqlite_path(spider_dir, db_id).is_file()]
    if missing:
        raise LoaderError(f"Spider databases not found under {spider_dir}: {', '.join(missing)}")
    sources = [(spider_sqlite_path(spider_dir, db_id), db_id) for db_id in db_ids]
    return sources + [(Path(path), Path(path).stem) for path in sqlite_files]


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


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="macsql load",
        description="Copy Spider (or any) SQLite databases into PostgreSQL, MySQL/MariaDB or "
        "DuckDB, one database each, and print where each was written.",
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
        "--to",
        metavar="URL",
        help="where to load: a PostgreSQL URL (as --admin-url); mysql://user:pw@host/ or "
        "mariadb://... (one MySQL database each); duckdb:///DIR (one DIR/<db_id>.duckdb file "
        "each), duckdb:///DIR/{db_id}.duckdb, or duckdb:///FILE.duckdb for one database",
    )
    parser.add_argument(
        "--spider-dir",
        default=os.environ.get("MACSQL_SPIDER_DIR", "../shared/data/spider"),
        help="Spider's folder, holding database/<id>/<id>.sqlite (default: $MACSQL_SPIDER_DIR "
        "or ../shared/data/spider)",
    )
    parser.add_argument(
        "--sqlite",
        action="append",
        default=[],
        metavar="PATH",
        help="also load this SQLite file (database named after the file); repeatable",
    )
    parser.add_argument("--replace", action="store_true", help="drop and reload existing ones")
    parser.add_argument(
        "--grant-select-to",
        metavar="ROLE",
        help="role given read access (CONNECT, USAGE, SELECT), created as a login role with no "
        "other privilege when it does not exist: the role macsql should connect as",
    )
    parser.add_argument(
        "--reader-password",
        default=os.environ.get("MACSQL_READER_PASSWORD"),
        help="password of a --grant-select-to role this command creates "
        "(default: $MACSQL_READER_PASSWORD)",
    )
    parser.add_argument(
        "--keep-numeric-text",
        action="store_true",
        help="keep numbers stored as text as text columns (default: load them as numbers)",
    )
    parser.add_argument("--verbose", "-v", action="store_true", help="print every warning")
    return parser


def main_load(argv: Sequence[str] | None = None) -> int:
    """Entry point of `macsql load` (and `python -m macsql.database.loaders.postgres`).

    Returns the process exit status: 0 on success, 2 on a usage or loading error. Any failure
    of the load (a server that is down, a wrong password, a driver's error) is one line on
    stderr, whichever the backend; `--verbose` adds the traceback.
    """
    args = build_parser().parse_args(argv)
    try:
        return _main_load(args)
    except Exception as exc:  # each driver has its own error classes; none deserves a traceback
        if args.verbose:
            traceback.print_exc()
        print(f"error: {_one_line(exc)}", file=sys.stderr)
        return 2


def _one_line(exc: BaseException) -> str:
    from macsql.database.connection_errors import describe_database_error, first_line

    if isinstance(exc, LoaderError):
        return first_line(str(exc), limit=500)
    return f"loading failed: {describe_database_error(exc)} ({type(exc).__name__})"


def _main_load(args: argparse.Namespace) -> int:
    db_ids = args.db_ids or ([] if args.sqlite else list(DEFAULT_SPIDER_DATABASES))
    backend = make_url(args.to).get_backend_name() if args.to else "postgresql"
    if backend in ("duckdb", "mysql", "mariadb"):
        return _main_other(args, db_ids, backend)
    if backend != "postgresql":
        print(
            f"error: cannot load into {backend}: --to takes a PostgreSQL, MySQL/MariaDB or "
            "DuckDB URL",
            file=sys.stderr,
        )
        return 2
    if args.to:
        args.admin_url = args.to
    if not args.admin_url:
        print("error: no --to, no --admin-url and MACSQL_PG_URL is not set", file=sys.stderr)
        return 2
    try:
        if args.grant_select_to and ensure_reader_role(
            args.admin_url, args.grant_select_to, args.reader_password
        ):
            print(f"created the read-only role {args.grant_select_to}")
        reports = load_spider_databases(
            args.spider_dir,
            args.admin_url,
            db_ids,
            replace=args.replace,
            grant_select_to=args.grant_select_to,
            numeric_text=not args.keep_numeric_text,
        )
        reports += [
            copy_sqlite_to_postgres(
                path,
                args.admin_url,
                replace=args.replace,
                grant_select_to=args.grant_select_to,
                numeric_text=not args.keep_numeric_text,
            )
            for path in args.sqlite
        ]
    except (LoaderError, DBAPIError) as exc:
        print(f"error: {_one_line(exc)}", file=sys.stderr)
        return 2
    _print_reports(reports, args.verbose)
    return 0


def _print_reports(reports: list[LoadReport], verbose: bool) -> None:
    for report in reports:
        print(report.summary())
        if verbose:
            for warning in report.warnings:
                print(f"  warning: {warning}")


def _main_other(args: argparse.Namespace, db_ids: list[str], backend: str) -> int:
    """`--to` a DuckDB or MySQL/MariaDB URL: their loaders, imported only when asked for."""
    from macsql.database.drivers import check_driver

    problem = check_driver(make_url(args.to))
    if problem:
        print(f"error: {problem}", file=sys.stderr)
        return 2
    try:
        if backend == "duckdb":
            if args.grant_select_to:
                print(
                    "error: --grant-select-to needs a backend with roles; DuckDB has none",
                    file=sys.stderr,
                )
                return 2
            from macsql.database.loaders.duckdb import load_into_duckdb

            reports = load_into_duckdb(
                args.spider_dir,
                args.to,
                db_ids,
                args.sqlite,
                replace=args.replace,
                numeric_text=not args.keep_numeric_text,
            )
        else:
            from macsql.database.loaders.mysql import ensure_reader_user, load_into_mysql

            if args.grant_select_to and ensure_reader_user(
                args.to, args.grant_select_to, args.reader_password
            ):
                print(f"created the read-only user {args.grant_select_to}")
            reports = load_into_mysql(
                args.spider_dir,
                args.to,
                db_ids,
                args.sqlite,
                replace=args.replace,
                grant_select_to=args.grant_select_to,
                numeric_text=not args.keep_numeric_text,
            )
    except LoaderError as exc:
        print(f"error: {_one_line(exc)}", file=sys.stderr)
        return 2
    _print_reports(reports, args.verbose)
    return 0


if __name__ == "__main__":
    sys.exit(main_load())
