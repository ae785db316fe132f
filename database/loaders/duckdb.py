"""Copy SQLite databases (Spider's, BIRD's) into DuckDB files, one file per database.

Column types follow the data, as in the PostgreSQL loader (`plan_tables` is shared): a column is
INTEGER/BIGINT or DOUBLE only when every value is a number, BLOB when every value is a blob,
VARCHAR otherwise. Names are folded to lower case like there; DuckDB matches identifiers
case-insensitively, so Spider's SQL works unchanged. A primary key is declared when the data
satisfies it (DuckDB enforces keys), and a foreign key when it references a table created before
on that table's primary key and the data satisfies it (DuckDB enforces them too, SQLite did not).

The file is written beside its target under a temporary name and renamed into place, so a
reader never sees half a database. A sidecar `<file>.macsql-loader` records the source file's
sha256: a file already loaded from the same source is skipped.
"""

from __future__ import annotations

import os
import sqlite3
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

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
    quote_ident,
    source_rows,
    sqlite_sources,
)

# Every integer column is BIGINT, so that a key and the columns referring to it match.
_DUCKDB_TYPES = {
    "integer": "BIGINT",
    "bigint": "BIGINT",
    "double precision": "DOUBLE",
    "numeric": "DOUBLE",
    "bytea": "BLOB",
    "text": "VARCHAR",
}
_INSERT_BATCH = 500


def _target_text(to: str) -> str:
    return to.split("://", 1)[1].removeprefix("/") if "://" in to else to


def names_one_file(to: str) -> bool:
    """True when `--to` is a file (`duckdb:///x/cs.duckdb`): a path whose last part has a
    suffix and no `{db_id}`; a folder is written one `<db_id>.duckdb` file per database."""
    text = _target_text(to)
    return "{db_id}" not in text and bool(Path(text).suffix)


def duckdb_target(to: str, db_id: str) -> Path:
    """The file for `db_id` named by `--to`: `duckdb:///dir/{db_id}.duckdb`, `duckdb:///dir`
    (`dir/<db_id>.duckdb`), or `duckdb:///file.duckdb` itself."""
    path_text = _target_text(to)
    if "{db_id}" in path_text:
        return Path(path_text.replace("{db_id}", db_id)).expanduser()
    if names_one_file(to):
        return Path(path_text).expanduser()
    return Path(path_text).expanduser() / f"{db_id}.duckdb"


def _foreign_keys(
    plan: TablePlan, keyed: dict[str, list[str]], types: dict[tuple[str, str], str]
) -> list[str]:
    """FOREIGN KEY clauses DuckDB can hold: to a table created before this one, on its whole
    primary key, between columns of the same type."""
    clauses = []
    for cols, ref_table, ref_cols in plan.foreign_keys:
        target = keyed.get(ref_table)
        resolved = ref_cols if all(ref_cols) else (target or [])
        if (
            ref_table == plan.name
            or target is None
            or list(resolved) != list(target)
            or len(cols) != len(resolved)
            or any(
                types.get((plan.name, c)) != types.get((ref_table, r))
                for c, r in zip(cols, resolved, strict=True)
            )
        ):
            continue
        clauses.append(
            f"FOREIGN KEY ({', '.join(quote_ident(c) for c in cols)}) REFERENCES "
            f"{quote_ident(ref_table)} ({', '.join(quote_ident(c) for c in resolved)})"
        )
    return clauses


def _create_and_fill(
    duck: Any, source: sqlite3.Connection, plan: TablePlan, keys: list[str]
) -> int:
    parts = [
        f"{quote_ident(c.name)} {_DUCKDB_TYPES[c.pg_type]}{' NOT NULL' if c.not_null else ''}"
        for c in plan.columns
    ]
    table = quote_ident(plan.name)
    duck.execute(f"CREATE TABLE {table} ({', '.join(parts + keys)})")
    # One INSERT of many rows: DuckDB's executemany runs a statement per row, far slower.
    row_marks = f"({', '.join('?' for _ in plan.columns)})"
    batch: list[tuple[Any, ...]] = []
    count = 0
    for row in [*source_rows(source, plan), None]:
        if row is not None:
            batch.append(row)
        if batch and (row is None or len(batch) >= _INSERT_BATCH):
            values = ", ".join(row_marks for _ in batch)
            duck.execute(f"INSERT INTO {table} VALUES {values}", [v for r in batch for v in r])
            count += len(batch)
            batch = []
    return count


def _create_table(
    duck: Any,
    source: sqlite3.Connection,
    plan: TablePlan,
    report: LoadReport,
    keyed: dict[str, list[str]],
    types: dict[tuple[str, str], str],
) -> None:
    import duckdb

    primary: list[str] = []
    if plan.primary_key:
        if key_holds(source, plan):
            primary = [f"PRIMARY KEY ({', '.join(quote_ident(c) for c in plan.primary_key)})"]
        else:
            report.warnings.append(f"{plan.name}: primary key skipped (the data violates it)")
    links = _foreign_keys(plan, keyed, types)
    try:
        count = _create_and_fill(duck, source, plan, primary + links)
    except duckdb.Error as exc:
        if not links:
            raise
        # DuckDB enforces foreign keys and SQLite never did: the data breaks one.
        duck.execute(f"DROP TABLE IF EXISTS {quote_ident(plan.name)}")
        report.warnings.append(f"{plan.name}: foreign keys skipped ({str(exc).splitlines()[0]})")
        links = []
        count = _create_and_fill(duck, source, plan, primary)
    report.tables[plan.name] = count
    report.foreign_keys += len(links)
    if primary:
        report.primary_keys += 1
        keyed[plan.name] = plan.primary_key


def copy_sqlite_to_duckdb(
    sqlite_path: str | Path,
    target: str | Path,
    *,
    replace: bool = False,
    numeric_text: bool = True,
) -> LoadReport:
    """Copy one SQLite file into the DuckDB file `target` (replaced atomically)."""
    import duckdb  # the optional extra, imported only when loading into DuckDB

    started = time.perf_counter()
    path, target = Path(sqlite_path), Path(target)
    if not path.is_file():
        raise LoaderError(f"SQLite database not found: {path}")
    report = LoadReport(database=target.stem, source=str(path), target=str(target.absolute()))
    marker = (
        f"{MARKER_PREFIX}{LOADER_VERSION}:{file_sha256(path)}:"
        f"{'numeric-text' if numeric_text else 'declared-text'}:duckdb-v2"
    )
    sidecar = target.with_name(target.name + ".macsql-loader")
    if target.exists():
        known = sidecar.read_text(encoding="utf-8").strip() if sidecar.is_file() else None
        if known == marker and not replace:
            report.skipped = True
            report.seconds = time.perf_counter() - started
            return report
        if known is None and not replace:
            raise LoaderError(
                f"{target} exists and was not written by the macsql loader; pass --replace"
            )
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(f".{target.name}.{os.getpid()}.partial")
    partial.unlink(missing_ok=True)
    try:
        duck = duckdb.connect(str(partial))
        try:
            with open_sqlite(path) as source:
                plans = plan_tables(source, report.warnings, numeric_text)
                types = {
                    (plan.name, c.name): _DUCKDB_TYPES[c.pg_type]
                    for plan in plans
                    for c in plan.columns
                }
                keyed: dict[str, list[str]] = {}
                for plan in plans:
                    _create_table(duck, source, plan, report, keyed, types)
            duck.execute("CHECKPOINT")
        finally:
            duck.close()
        os.replace(partial, target)
        sidecar.write_text(marker + "\n", encoding="utf-8")
    except duckdb.Error as exc:
        raise LoaderError(f"loading {path.name} into {target} failed: {exc}") from exc
    finally:
        partial.unlink(missing_ok=True)
        partial.with_name(partial.name + ".wal").unlink(missing_ok=True)
    report.seconds = time.perf_counter() - started
    return report


def load_into_duckdb(
    spider_dir: str | Path,
    to: str,
    db_ids: Sequence[str],
    sqlite_files: Sequence[str] = (),
    *,
    replace: bool = False,
    numeric_text: bool = True,
) -> list[LoadReport]:
    """Load Spider databases by id, and other SQLite files by path, into DuckDB files."""
    sources = sqlite_sources(spider_dir, db_ids, sqlite_files)
    if names_one_file(to) and len(sources) > 1:
        raise LoaderError(
            f"--to {to} names one file, but {len(sources)} databases are to be loaded: name "
            "one database, or give a folder (duckdb:///DIR) or duckdb:///DIR/{db_id}.duckdb"
        )
    return [
        copy_sqlite_to_duckdb(
            source, duckdb_target(to, db_id), replace=replace, numeric_text=numeric_text
        )
        for source, db_id in sources
    ]
