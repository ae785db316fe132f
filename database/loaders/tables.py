"""Tables that are not a database (CSV and Parquet files, pandas DataFrames) loaded into a
DuckDB file, which macsql then opens like any DuckDB database: read-only, through the guard,
under the same timeout, row cap and byte budget.

DuckDB reads CSV (types sniffed from the data) and Parquet itself, and takes a DataFrame by
scanning it in place. Each source becomes one table, named after its file or its key, folded
to a plain identifier. The file is written under a temporary name and renamed into place, so a
reader never sees half of it.
"""

from __future__ import annotations

import glob
import hashlib
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from macsql.database.file_kinds import file_kind
from macsql.database.loaders.csv_text import csv_encoding, utf8_copy
from macsql.database.loaders.plan import LoaderError

TableSource = Any
"""A CSV or Parquet path (str or Path), or a pandas DataFrame."""


def table_name(text: str) -> str:
    """A plain identifier from a file stem or a key: lower case, `_` for anything else, and
    never starting with a digit."""
    stem = text.lower()
    for suffix in (".gz", ".csv", ".tsv", ".parquet", ".pq"):
        stem = stem.removesuffix(suffix)
    name = re.sub(r"[^a-z0-9_]+", "_", stem).strip("_") or "data"
    return f"t_{name}" if name[0].isdigit() else name


def _is_dataframe(value: object) -> bool:
    return type(value).__module__.split(".")[0] == "pandas" and hasattr(value, "columns")


def named_sources(db: TableSource | Mapping[str, TableSource]) -> dict[str, TableSource]:
    """Table name -> source: a mapping names its tables; a file is named after its stem; a
    lone DataFrame is `data`."""
    if isinstance(db, Mapping):
        return {table_name(str(name)): source for name, source in db.items()}
    if _is_dataframe(db):
        return {"data": db}
    return {table_name(Path(db).name): db}


def _create(duck: Any, name: str, source: TableSource, scratch: Path) -> None:
    table = '"' + name.replace('"', '""') + '"'
    if _is_dataframe(source):
        duck.register("macsql_frame", source)
        try:
            duck.execute(f"CREATE TABLE {table} AS SELECT * FROM macsql_frame")
        finally:
            duck.unregister("macsql_frame")
        return
    path = Path(source).expanduser()
    if not path.is_file():
        raise LoaderError(f"table file not found: {path}")
    kind = file_kind(path)
    reader = "read_parquet" if kind == "parquet" else "read_csv_auto"
    if kind not in ("csv", "parquet"):
        raise LoaderError(f"{path} is neither a CSV nor a Parquet file")
    if kind == "csv":
        if path.stat().st_size == 0:
            raise LoaderError(f"{path} is empty: a CSV file needs at least its header line")
        encoding = csv_encoding(path)
        if encoding != "utf-8":  # DuckDB reads UTF-8 only
            path = utf8_copy(path, encoding, scratch.with_name(f"{scratch.name}.{name}.csv"))
    duck.execute(f"CREATE TABLE {table} AS SELECT * FROM {reader}(?)", [str(path)])


def load_tables(db: TableSource | Mapping[str, TableSource], target: str | Path) -> Path:
    """Write every table of `db` into the DuckDB file `target` (replaced); its path."""
    try:
        import duckdb
    except ImportError as exc:
        raise LoaderError(
            'loading CSV, Parquet or DataFrames needs DuckDB: pip install "macsql[duckdb]"'
        ) from exc
    target = Path(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(f".{target.name}.{os.getpid()}.partial")
    partial.unlink(missing_ok=True)
    try:
        duck = duckdb.connect(str(partial))
        try:
            for name, source in named_sources(db).items():
                _create(duck, name, source, partial)
            duck.execute("CHECKPOINT")
        finally:
            duck.close()
        os.replace(partial, target)
    except duckdb.Error as exc:
        # DuckDB's CSV errors run to a dozen lines (the line, guesses, options): the first says it
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise LoaderError(f"cannot load {db!s:.80} into DuckDB: {first}") from exc
    finally:
        for leftover in partial.parent.glob(f"{glob.escape(partial.name)}*"):
            leftover.unlink(missing_ok=True)
    return target


def cached_table_file(path: str | Path, cache_dir: Path) -> Path:
    """The DuckDB file of a CSV or Parquet file, in `cache_dir`, loaded on first use and again
    whenever the file changes (its path, size and modification time name the copy)."""
    source = Path(path).expanduser().absolute()
    stat = source.stat()
    key = hashlib.sha256(f"{source}\0{stat.st_size}\0{stat.st_mtime_ns}".encode()).hexdigest()
    target = cache_dir / f"{table_name(source.name)}-{key[:16]}.duckdb"
    if not target.is_file():
        load_tables(source, target)
    return target
