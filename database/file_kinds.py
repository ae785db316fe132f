"""What kind of file a `--db` path is, read from its first bytes (its extension for CSV).

A database file says what it is in its header: SQLite files start with "SQLite format 3\\0",
DuckDB files carry "DUCK" at byte 8, Parquet files start with "PAR1". CSV has no header of its
own, so its extension decides. Anything else is handed to SQLite, which names the problem.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Literal

FileKind = Literal["sqlite", "duckdb", "parquet", "csv"]

SQLITE_HEADER = b"SQLite format 3\x00"
DUCKDB_MAGIC = b"DUCK"
PARQUET_MAGIC = b"PAR1"
CSV_SUFFIXES = (".csv", ".tsv", ".csv.gz", ".tsv.gz")
TABLE_FILE_KINDS = ("parquet", "csv")
"""Kinds that hold one table, not a database: macsql loads them into DuckDB."""


def file_kind(path: Path) -> FileKind:
    """The kind of the file at `path` (which exists)."""
    try:
        with path.open("rb") as handle:
            head = handle.read(16)
    except OSError:
        return "sqlite"  # SQLite's own open reports what is wrong
    if not head and path.name.lower().endswith(CSV_SUFFIXES):
        return "csv"  # so that loading it says it is empty
    if head.startswith(SQLITE_HEADER) or not head:
        return "sqlite"  # an empty file is an empty SQLite database
    if head[8:12] == DUCKDB_MAGIC:
        return "duckdb"
    if head.startswith(PARQUET_MAGIC):
        return "parquet"
    if path.name.lower().endswith(CSV_SUFFIXES):
        return "csv"
    return "sqlite"


def is_table_file(value: object) -> bool:
    """True for a path to a CSV or Parquet file (which holds a table, not a database)."""
    if not isinstance(value, str | os.PathLike) or "://" in str(value):
        return False
    path = Path(value).expanduser()
    try:
        found = path.is_file()
    except OSError:  # a name too long for the file system is no file: the caller says so
        return False
    return found and file_kind(path) in TABLE_FILE_KINDS
