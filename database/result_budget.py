"""The byte budget of one result, charged as the engine's bytes become Python objects.

Checking the budget after a row is in memory is too late: on the code before, one SQLite row of
30 values of 60 MB peaked at 5.0 GB, one DuckDB `list(i)` of 30 million integers at 3.2 GB, one
PostgreSQL array of 30 million integers at 1.8 GB, before any check ran. So each backend charges
a `ByteBudget` before it converts: SQLite bounds every value by the budget over the number of
columns (`SQLITE_LIMIT_LENGTH`), PostgreSQL's loaders charge each cell's wire size times what
its Python objects may take (`postgres_budget`), PyMySQL charges every byte it reads
(`mysql_backend`), DuckDB charges each Arrow batch's estimated Python size before converting it
(`duckdb_backend`)."""

from __future__ import annotations


class ResultTooLarge(Exception):
    """The result (or the part of it converted so far) exceeds the byte budget."""


def too_large_message(max_bytes: int) -> str:
    return (
        f"the result is larger than the {_mb(max_bytes)} budget (max_result_bytes); "
        "select fewer or shorter columns, aggregate, or add a LIMIT"
    )


def _mb(size: int) -> str:
    return f"{size / 1048576:g} MB" if size >= 1048576 else f"{size:,} bytes"


class ByteBudget:
    """Bytes charged against a limit; `charge` raises `ResultTooLarge` past it."""

    __slots__ = ("limit", "used")

    def __init__(self, limit: int) -> None:
        self.limit = max(1, limit)
        self.used = 0

    def charge(self, size: int) -> None:
        self.used += size
        if self.used > self.limit:
            raise ResultTooLarge(too_large_message(self.limit))
