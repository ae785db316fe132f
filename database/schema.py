"""The schema representation the agents read: tables, columns, keys, descriptions, value examples.

Built once per database and cached in memory and on disk, keyed by the database's identity and
modification stamp. Value examples come from a bounded row sample per table (a few evenly spread
rowid ranges on SQLite, `TABLESAMPLE` on PostgreSQL), not from the official code's full `GROUP BY`
over every column, whose cost grows with the table.
"""

from __future__ import annotations

import contextlib
import copy
import csv
import hashlib
import json
import os
import re
import threading
import time
import warnings
from collections import Counter, OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field, fields, is_dataclass
from functools import cached_property, wraps
from pathlib import Path
from typing import Any, TypeVar

from macsql.database.atomic_files import write_text_atomically
from macsql.database.cache_paths import cache_root
from macsql.database.connection import DatabaseRef, get_engine
from macsql.database.execution import Outcome, execute_sql

SCHEMA_FORMAT_VERSION = 5
LONG_TEXT_CHARS = 50
SAMPLE_BLOCKS = 8
MAX_SAMPLED_VALUE = 1000
"""Longer values (characters, or bytes of a BLOB) are never fetched for value examples: a table
of 10 MB BLOBs would otherwise cost gigabytes to sample, for examples that are never shown."""


@dataclass
class ColumnInfo:
    name: str
    type: str
    primary_key: bool = False
    full_name: str = ""
    description: str = ""
    value_description: str = ""
    examples: list[Any] = field(default_factory=list)
    has_nulls: bool = False


@dataclass
class TableInfo:
    name: str
    columns: list[ColumnInfo]

    def column(self, name: str) -> ColumnInfo | None:
        lowered = name.strip('`"[] ').lower()
        return next((c for c in self.columns if c.name.lower() == lowered), None)


@dataclass(frozen=True)
class ForeignKey:
    table: str
    column: str
    ref_table: str
    ref_column: str


@dataclass
class SchemaInfo:
    """A database schema as the agents see it."""

    db_name: str
    dialect: str
    tables: list[TableInfo]
    foreign_keys: list[ForeignKey]
    notes: list[str] = field(default_factory=list)
    """Objects left out, and why (a view that no longer compiles)."""

    @property
    def total_columns(self) -> int:
        return sum(len(t.columns) for t in self.tables)

    @property
    def avg_columns(self) -> float:
        return self.total_columns / len(self.tables) if self.tables else 0.0

    def table(self, name: str) -> TableInfo | None:
        lowered = name.strip('`"[] ').lower()
        return next((t for t in self.tables if t.name.lower() == lowered), None)

    def key_columns(self, table: str) -> set[str]:
        """Primary- and foreign-key columns of a table: they survive every selection."""
        keys = {c.name for t in self.tables if t.name == table for c in t.columns if c.primary_key}
        for fk in self.foreign_keys:
            if fk.table == table:
                keys.add(fk.column)
            if fk.ref_table == table:
                keys.add(fk.ref_column)
        return keys

    def to_dict(self) -> dict[str, Any]:
        """`dataclasses.asdict(self)`, without its deep copy of every value through `copy`:
        a linked schema is converted on every question (~10x faster on a wide schema)."""
        plain: dict[str, Any] = _plain(self)
        return plain

    # A cached schema serves every question on its database: convert it once.
    # (cached_property keeps it out of asdict(), which only walks the fields.)
    @cached_property
    def state_dict(self) -> dict[str, Any]:
        """`to_dict()`, computed once; shared, so callers must not mutate it."""
        return self.to_dict()

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> SchemaInfo:
        return cls(
            db_name=data["db_name"],
            dialect=data["dialect"],
            tables=[
                TableInfo(t["name"], [ColumnInfo(**c) for c in t["columns"]])
                for t in data["tables"]
            ],
            foreign_keys=[ForeignKey(**fk) for fk in data["foreign_keys"]],
            notes=list(data.get("notes") or []),
        )


_ATOMS = frozenset({str, int, float, bool, bytes, type(None)})


_FIELD_NAMES: dict[type, tuple[str, ...]] = {}


def _field_names(cls: type) -> tuple[str, ...]:
    names = _FIELD_NAMES.get(cls)
    if names is None:
        names = _FIELD_NAMES[cls] = tuple(f.name for f in fields(cls))
    return names


def _plain(value: Any) -> Any:
    """What `asdict` makes of `value`: dataclasses as dicts of their fields, lists, tuples and
    dicts rebuilt with their items converted, immutable atoms as they are, anything else
    deep-copied."""
    kind = type(value)
    if kind in _ATOMS:
        return value
    if kind is list or kind is tuple:
        return kind(_plain(item) for item in value)
    if kind is dict:
        return {_plain(k): _plain(v) for k, v in value.items()}
    if is_dataclass(value) and not isinstance(value, type):
        return {name: _plain(getattr(value, name)) for name in _field_names(kind)}
    return copy.deepcopy(value)


T = TypeVar("T")
_MISSING = object()


def once_per_schema(compute: Callable[[SchemaInfo], T]) -> Callable[[SchemaInfo], T]:
    """`compute(schema)` done once per schema object and kept on it, as `cached_property` keeps
    `state_dict`: a cached schema serves every question on its database, and what is derived
    from it (its rendering, its size, its columns' words) goes when it goes. For the layers
    above, which derive things a schema should not know about."""
    slot = f"_once_{compute.__module__}.{compute.__qualname__}"

    @wraps(compute)
    def cached(schema: SchemaInfo) -> T:
        memo = schema.__dict__
        hit = memo.get(slot, _MISSING)
        if hit is _MISSING:  # two threads may both compute it: the same value, kept once
            hit = memo.setdefault(slot, compute(schema))
        return hit

    return cached


# --------------------------------------------------------------------------- building

_cache: OrderedDict[tuple[Any, ...], SchemaInfo] = OrderedDict()
_cache_lock = threading.Lock()
_CACHE_SIZE = 256
"""Schemas kept in memory, least recently used first out: a key holds the database's version
(file time or server identity), so a long-lived process that sees many databases, or one
database edited often, keeps the recent ones only (the disk cache keeps the rest)."""


def _remember(key: tuple[Any, ...], schema: SchemaInfo) -> None:
    with _cache_lock:
        _cache[key] = schema
        _cache.move_to_end(key)
        while len(_cache) > _CACHE_SIZE:
            _cache.popitem(last=False)


def _cache_dir() -> Path | None:
    if os.environ.get("MACSQL_SCHEMA_CACHE", "1") == "0":
        return None
    return cache_root() / "schemas"


def load_schema(
    db: DatabaseRef, *, num_examples: int = 6, sample_rows: int = 2000, timeout: float = 30.0
) -> SchemaInfo:
    """The schema of `db`, from the memory or disk cache when the database is unchanged."""
    key = (db.identity(), db.dialect, num_examples, sample_rows, SCHEMA_FORMAT_VERSION)
    with _cache_lock:
        hit = _cache.get(key)
        if hit is not None:
            _cache.move_to_end(key)
    if hit is not None:
        return hit
    folder = _cache_dir()
    path = None
    if folder is not None:
        digest = hashlib.sha256(repr(key).encode()).hexdigest()[:24]
        path = folder / f"{db.name}-{digest}.json"
        if path.is_file():
            try:
                schema = SchemaInfo.from_dict(json.loads(path.read_text(encoding="utf-8")))
            except (ValueError, KeyError, TypeError):
                schema = None  # a corrupt cache file is rebuilt below
            if schema is not None:
                _remember(key, schema)
                return schema
    schema = build_schema(db, num_examples=num_examples, sample_rows=sample_rows, timeout=timeout)
    _remember(key, schema)
    if path is not None:
        with contextlib.suppress(OSError):  # a read-only home must not stop a query
            write_text_atomically(
                path, json.dumps(schema.to_dict(), ensure_ascii=False, default=str)
            )
    return schema


def clear_schema_cache() -> None:
    with _cache_lock:
        _cache.clear()


def quiet_reflection_warnings() -> None:
    """Silence, on purpose, the two SQLAlchemy warnings that SQLite reflection prints on
    ordinary databases (Spider's `loan_1`, `twitter_1`, ...), both of which we handle:

    - a foreign key whose columns differ in case from their table's (`FOREIGN KEY(Cust_ID)` on
      a column `cust_ID`): the key still comes from `PRAGMA foreign_keys`, and `_dedupe`
      matches its names without regard to case;
    - a type with arguments SQLAlchemy's class does not take (`INTEGER(11)`): the schema keeps
      the type's name, which is all the prompts show.

    Idempotent (`filterwarnings` replaces an equal filter), and called before each build, so a
    caller that reset the warning filters does not get them back."""
    from sqlalchemy.exc import SAWarning

    warnings.filterwarnings(
        "ignore",
        message=r"Could not instantiate type .* with reflected arguments",
        category=SAWarning,
    )
    warnings.filterwarnings(
        "ignore",
        message=r".*SQL-parsed foreign key constraint .* could not be located in PRAGMA",
        category=SAWarning,
    )


def build_schema(
    db: DatabaseRef, *, num_examples: int = 6, sample_rows: int = 2000, timeout: float = 30.0
) -> SchemaInfo:
    """Introspect `db` and sample value examples; no cache."""
    from sqlalchemy import inspect  # a cached schema is read without SQLAlchemy

    from macsql.database.duckdb_backend import DuckDBInspector

    quiet_reflection_warnings()
    engine = get_engine(db)
    inspector: Any = DuckDBInspector(engine) if db.backend == "duckdb" else inspect(engine)
    # Views are read-only and as queryable as tables, so the agents see them too.
    table_names = sorted({*inspector.get_table_names(), *inspector.get_view_names()})
    descriptions = load_descriptions(db.description_dir) if db.description_dir else {}
    tables: list[TableInfo] = []
    fks: list[ForeignKey] = []
    notes: list[str] = []
    for name in table_names:
        try:
            table, table_fks = _introspect(inspector, name)
        except Exception as exc:  # a view over a dropped table or column no longer compiles
            first = str(getattr(exc, "orig", None) or exc).strip().splitlines()
            why = " ".join((first[0] if first else type(exc).__name__).split())[:200]
            notes.append(f"skipped {name!r}: it cannot be read ({why})")
            continue
        _attach_descriptions(table, descriptions.get(name.lower(), {}))
        tables.append(table)
        fks.extend(table_fks)
    schema = SchemaInfo(db.name, db.dialect, tables, _dedupe(fks, tables), notes)
    if num_examples > 0:
        # One budget for all the sampling: a database of thousands of tables (or of views
        # that are slow on purpose) would otherwise cost a timeout per table before the first
        # model call.
        deadline = time.monotonic() + timeout
        for index, table in enumerate(schema.tables):
            left = deadline - time.monotonic()
            if left <= 0:
                skipped = len(schema.tables) - index
                notes.append(
                    f"no value examples for {skipped} of {len(schema.tables)} tables: sampling "
                    f"took its whole {timeout:g}s budget"
                )
                break
            _sample_examples(db, schema, table, num_examples, sample_rows, left)
    return schema


def _introspect(inspector: Any, name: str) -> tuple[TableInfo, list[ForeignKey]]:
    """A table's or view's columns and keys; raises when the database cannot describe it."""
    pk = set(inspector.get_pk_constraint(name).get("constrained_columns") or [])
    columns = [
        ColumnInfo(
            name=c["name"],
            type=str(c["type"]) if c.get("type") is not None else "",
            primary_key=c["name"] in pk,
            # A column comment (PostgreSQL, MySQL, DuckDB) is the catalog's own description:
            # often the only readable name an abbreviated column (`KUNNR`, `qty_ord`) has.
            description=" ".join(str(c.get("comment") or "").split()),
        )
        for c in inspector.get_columns(name)
    ]
    fks: list[ForeignKey] = []
    for fk in inspector.get_foreign_keys(name):
        fks.extend(_foreign_keys(name, dict(fk), inspector))
    if not columns:
        raise ValueError("it has no columns")
    return TableInfo(name, columns), fks


def _foreign_keys(table: str, fk: dict[str, Any], inspector: Any) -> list[ForeignKey]:
    ref_table = fk.get("referred_table")
    if not ref_table:
        return []
    local = fk.get("constrained_columns") or []
    remote = fk.get("referred_columns") or []
    if not remote or all(r is None for r in remote):
        # SQLite allows `REFERENCES t` with no column: it means t's primary key.
        try:
            remote = inspector.get_pk_constraint(ref_table).get("constrained_columns") or []
        except Exception:
            remote = []
    return [
        ForeignKey(table, lc, ref_table, rc)
        for lc, rc in zip(local, remote, strict=False)
        if lc and rc
    ]


def _dedupe(fks: list[ForeignKey], tables: list[TableInfo]) -> list[ForeignKey]:
    """Drop duplicate keys and keys naming tables or columns that do not exist."""
    by_name = {t.name.lower(): t for t in tables}
    seen: set[ForeignKey] = set()
    out = []
    for fk in fks:
        src, dst = by_name.get(fk.table.lower()), by_name.get(fk.ref_table.lower())
        if src is None or dst is None:
            continue
        src_col, dst_col = src.column(fk.column), dst.column(fk.ref_column)
        if src_col is None or dst_col is None:
            continue
        clean = ForeignKey(src.name, src_col.name, dst.name, dst_col.name)
        if clean not in seen:
            seen.add(clean)
            out.append(clean)
    return out


# --------------------------------------------------------------------------- descriptions


def load_descriptions(folder: Path) -> dict[str, dict[str, dict[str, str]]]:
    """BIRD's `database_description/<table>.csv` files: table -> column -> fields."""
    out: dict[str, dict[str, dict[str, str]]] = {}
    for path in sorted(folder.glob("*.csv")):
        raw = path.read_bytes()
        for encoding in ("utf-8-sig", "cp1252", "latin-1"):
            try:
                content = raw.decode(encoding)
                break
            except UnicodeDecodeError:
                continue
        columns: dict[str, dict[str, str]] = {}
        for row in csv.DictReader(content.splitlines()):
            row = {(k or "").strip().lower(): (v or "").strip() for k, v in row.items()}
            original = row.get("original_column_name", "")
            if original:
                columns[original.lower()] = row
        out[path.stem.strip().lower()] = columns
    return out


def _attach_descriptions(table: TableInfo, described: dict[str, dict[str, str]]) -> None:
    for col in table.columns:
        row = described.get(col.name.lower())
        if not row:
            continue
        col.full_name = row.get("column_name", "")
        col.description = row.get("column_description", "")
        value_description = row.get("value_description", "")
        if value_description.lower() not in ("", "not useful", "commonsense evidence:"):
            col.value_description = value_description


# --------------------------------------------------------------------------- value examples

_URL = re.compile(r"^(https?|ftp)://", re.I)
_EMAIL = re.compile(r"^[^@\s]+@[^@\s]+\.[a-z]{2,}$", re.I)
_DATE = re.compile(r"^\d{4}-\d{1,2}-\d{1,2}([ T]\d{1,2}:\d{2}(:\d{2})?(\.\d+)?)?$")
_NUMERIC_TYPES = ("INT", "REAL", "FLOAT", "DOUBLE", "NUMERIC", "DECIMAL", "NUMBER")
_DATE_TYPES = ("DATE", "TIME")


def is_identifier_column(name: str) -> bool:
    lowered = name.lower()
    return lowered == "id" or lowered.endswith("_id") or bool(re.search(r"[a-z0-9]I[dD]$", name))


_FIXED_SIZE_TYPES = (*_NUMERIC_TYPES, *_DATE_TYPES, "BOOL", "UUID", "SERIAL", "MONEY")


def _sampled_column(db: DatabaseRef, column: ColumnInfo, quote: Any) -> str:
    """The select expression of a sampled column: a long value comes back as '' (never an
    example, and not a NULL). The server measures it, so it never travels: SQLite's length() of
    a BLOB does not even read it. PostgreSQL's CASE needs one type for both arms (and its stored
    size, pg_column_size, is no guide: a long repetitive text compresses to a few bytes)."""
    name = quote(column.name)
    if db.backend == "sqlite":
        return f"CASE WHEN length({name}) <= {MAX_SAMPLED_VALUE} THEN {name} ELSE '' END"
    if db.backend != "postgresql":
        return name
    kind = column.type.upper()
    if any(t in kind for t in _FIXED_SIZE_TYPES):
        return name
    if "BYTEA" in kind:
        return (
            f"CASE WHEN octet_length({name}) <= {MAX_SAMPLED_VALUE} THEN {name} ELSE ''::bytea END"
        )
    text_value = f"{name}::text"
    return (
        f"CASE WHEN octet_length({text_value}) <= {MAX_SAMPLED_VALUE} THEN {text_value} ELSE '' END"
    )


def _sample_rows(
    db: DatabaseRef, table: str, columns: list[ColumnInfo], limit: int, timeout: float
) -> list[tuple[Any, ...]]:
    deadline = time.monotonic() + timeout
    quote = get_engine(db).dialect.identifier_preparer.quote
    cols = ", ".join(_sampled_column(db, c, quote) for c in columns)
    source = quote(table)
    queries: list[str] = []
    if db.backend == "sqlite":
        top = execute_sql(db, f"SELECT max(rowid) FROM {source}", timeout=timeout, max_rows=1)
        max_rowid = top.rows[0][0] if top.outcome == Outcome.OK and top.rows else None
        if isinstance(max_rowid, int) and max_rowid > limit * 2:
            per_block = max(1, limit // SAMPLE_BLOCKS)
            step = max_rowid // SAMPLE_BLOCKS
            queries = [
                f"SELECT {cols} FROM {source} WHERE rowid >= {i * step} "
                f"ORDER BY rowid LIMIT {per_block}"
                for i in range(SAMPLE_BLOCKS)
            ]
    elif db.backend == "postgresql":
        from sqlalchemy import text

        with get_engine(db).connect() as conn:
            estimate = conn.execute(
                text("SELECT reltuples FROM pg_class WHERE oid = to_regclass(:t)"), {"t": source}
            ).scalar()
        if estimate and estimate > limit * 2:
            percent = min(100.0, 100.0 * limit * 2 / float(estimate))
            queries = [f"SELECT {cols} FROM {source} TABLESAMPLE SYSTEM ({percent:.6f})"]
    if not queries:
        queries = [f"SELECT {cols} FROM {source}"]
    rows: list[tuple[Any, ...]] = []
    for query in queries:
        left = deadline - time.monotonic()
        if left <= 0:
            break
        result = execute_sql(db, query, timeout=left, max_rows=limit)
        rows.extend(result.rows)
    return rows[: limit + SAMPLE_BLOCKS]


def _sample_examples(
    db: DatabaseRef,
    schema: SchemaInfo,
    table: TableInfo,
    num_examples: int,
    sample_rows: int,
    timeout: float,
) -> None:
    keys = schema.key_columns(table.name)
    wanted = [c for c in table.columns if c.name not in keys and not c.primary_key]
    if not wanted:
        return
    rows = _sample_rows(db, table.name, wanted, sample_rows, timeout)
    for index, col in enumerate(wanted):
        values = [r[index] for r in rows]
        col.has_nulls = any(v is None for v in values)
        if is_identifier_column(col.name):
            continue
        col.examples = pick_examples(values, col.type, num_examples)


def pick_examples(values: list[Any], declared_type: str, limit: int) -> list[Any]:
    """Up to `limit` frequent distinct non-null values, following MAC-SQL's exclusions."""
    counts = Counter(v for v in values if v is not None and v != "")
    if not counts:
        return []
    ranked = [v for v, _ in counts.most_common()]
    kind = declared_type.upper()
    texts = [v for v in ranked if isinstance(v, str)]
    if texts and any(_URL.match(v) or _EMAIL.match(v) for v in texts[:limit]):
        return []
    numeric = all(isinstance(v, int | float) for v in ranked) or any(
        t in kind for t in _NUMERIC_TYPES
    )
    if numeric and len(ranked) > 10:
        return []
    if texts and sum(len(v) for v in texts) / len(texts) > LONG_TEXT_CHARS:
        return []
    is_date = any(t in kind for t in _DATE_TYPES) or (
        texts and all(_DATE.match(v) for v in texts[:limit])
    )
    if is_date:
        return ranked[:1]
    if isinstance(ranked[0], bytes | bytearray | memoryview):
        return []
    return ranked[:limit]
