"""What every loader shares: where the SQLite databases are, how each of their tables becomes a
plan (names folded, column types chosen from the data), and the report of a load.

The plan's column types are PostgreSQL's (`integer`, `bigint`, `double precision`, `numeric`,
`bytea`, `text`); the DuckDB and MySQL loaders map them to their own.
"""

from __future__ import annotations

import hashlib
import math
import sqlite3
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

MARKER_PREFIX = "macsql-loader:"
"""The start of the database comment that marks a database this loader created."""


LOADER_VERSION = "v2"
"""Part of the marker: a database loaded by an older loader is reloaded."""


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


def quote_ident(name: str) -> str:
    """A PostgreSQL identifier, always quoted."""
    return '"' + name.replace("\x00", "").replace('"', '""') + '"'


def sqlite_quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def open_sqlite(path: Path) -> sqlite3.Connection:
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
    q = sqlite_quote(column)
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
        info = conn.execute(f"PRAGMA table_info({sqlite_quote(source)})").fetchall()
        probes = [_stats_sql(column) for _cid, column, *_ in info]
        values = (
            conn.execute(f"SELECT {', '.join(probes)} FROM {sqlite_quote(source)}").fetchone()
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
            f"PRAGMA foreign_key_list({sqlite_quote(source)})"
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


def source_rows(conn: sqlite3.Connection, plan: TablePlan) -> Iterator[tuple[Any, ...]]:
    select = ", ".join(sqlite_quote(c.source) for c in plan.columns)
    cursor = conn.execute(f"SELECT {select} FROM {sqlite_quote(plan.source)}")
    types = [c.pg_type for c in plan.columns]
    while batch := cursor.fetchmany(_COPY_BATCH):
        for row in batch:
            yield tuple(_convert(v, t) for v, t in zip(row, types, strict=True))


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


def key_holds(conn: sqlite3.Connection, plan: TablePlan) -> bool:
    by_name = {c.name: c.source for c in plan.columns}
    cols = [sqlite_quote(by_name[name]) for name in plan.primary_key]
    table = sqlite_quote(plan.source)
    nulls = " OR ".join(f"{c} IS NULL" for c in cols)
    row = conn.execute(
        f"SELECT (SELECT count(*) FROM {table} WHERE {nulls}), "
        f"(SELECT count(*) FROM (SELECT {', '.join(cols)} FROM {table} GROUP BY "
        f"{', '.join(cols)} HAVING count(*) > 1))"
    ).fetchone()
    return row is not None and row == (0, 0)
