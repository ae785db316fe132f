"""A persistent index of a database's stored text values, for value linking.

The question says "Fresno", the column stores "Fresno County Office of Education": the agents
only write the right literal when they see the stored one. This index holds the distinct values
of text-like columns (keys, ids, URLs, e-mails and long texts skipped) in an SQLite file with an
FTS5 trigram table, so that a lookup is a substring search on normalised text (lower case, no
accents) followed by a fuzzy re-score. The choice of FTS5 trigram over an exhaustive fuzzy scan
was made by measurement (docs/linking.md, "Why these libraries").

The build is bounded: at most `rows_per_table` rows are read per table (TABLESAMPLE on a
PostgreSQL table larger than that), and every text column keeps its distinct values, the most
frequent first, up to `values_per_column` (a wide database no longer shares one global cap out
over thousands of columns, which left most values of high-cardinality columns unindexed);
`max_values` is only a ceiling on the whole file. The build also infers the joins the values
show and the schema does not declare (`join_inference`), stored in the same file. A SQLite
database's index is keyed like the schema cache (file, modification time, size) and rebuilt
when the file changes; a server's index is built once and rebuilt only on an explicit refresh
(`macsql index --refresh`).
"""

from __future__ import annotations

import hashlib
import os
import re
import sqlite3
import threading
import time
import unicodedata
from collections import Counter
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rapidfuzz import fuzz

from macsql.database.cache_paths import cache_root
from macsql.database.connection import DatabaseRef, get_engine
from macsql.database.execution import Outcome, execute_sql
from macsql.database.join_inference import infer_joins
from macsql.database.schema import (
    LONG_TEXT_CHARS,
    ForeignKey,
    SchemaInfo,
    is_identifier_column,
)

INDEX_FORMAT_VERSION = 4
MAX_VALUE_CHARS = 80
_TEXT_TYPES = ("CHAR", "TEXT", "CLOB", "STRING", "NAME")
_SKIPPED_NAME = re.compile(r"(url|uri|link|email|e_mail|phone|fax|password|hash|path)$", re.I)
_URL_OR_MAIL = re.compile(r"^(https?|ftp)://|^[^@\s]+@[^@\s]+\.[a-z]{2,}$", re.I)


def normalise(text: str) -> str:
    """Lower case, accents removed, runs of space and punctuation as one space."""
    if text.isascii():  # nothing to decompose: most phrases, on every question
        bare = text
    else:
        decomposed = unicodedata.normalize("NFKD", text)
        bare = "".join(ch for ch in decomposed if not unicodedata.combining(ch))
    return " ".join(re.sub(r"[^\w]+", " ", bare.lower()).split())


@dataclass(frozen=True)
class ValueMatch:
    table: str
    column: str
    value: str
    score: float
    """0..1: how well the value matches a phrase of the question (1 = the same words)."""
    phrase: str


@dataclass
class IndexStats:
    values: int
    columns: int
    build_seconds: float
    size_bytes: int
    rebuilt: bool


def _indexable_columns(schema: SchemaInfo, table_name: str) -> list[str]:
    table = schema.table(table_name)
    if table is None:
        return []
    out = []
    for col in table.columns:
        kind = (col.type or "TEXT").upper()
        # Text keys stay (a language, a country code); numeric ones fail the type test below.
        if is_identifier_column(col.name):
            continue
        if _SKIPPED_NAME.search(col.name):
            continue
        if kind and not any(t in kind for t in _TEXT_TYPES) and kind not in ("", "ANY"):
            continue
        out.append(col.name)
    return out


def _column_values(values: Iterable[Any], limit: int) -> list[str]:
    """The column's most frequent distinct short text values, or none for long texts."""
    counts = Counter(
        v.strip()
        for v in values
        if isinstance(v, str) and v.strip() and len(v) <= 4 * LONG_TEXT_CHARS
    )
    if not counts:
        return []
    mean = sum(len(v) * n for v, n in counts.items()) / sum(counts.values())
    if mean > LONG_TEXT_CHARS:
        return []
    ranked = [v for v, _ in counts.most_common(limit)]
    if any(_URL_OR_MAIL.match(v) for v in ranked[:5]):
        return []
    return [v for v in ranked if len(v) <= MAX_VALUE_CHARS]


def _read_rows(
    db: DatabaseRef, table: str, columns: list[str], rows_per_table: int, timeout: float
) -> list[tuple[Any, ...]]:
    quote = get_engine(db).dialect.identifier_preparer.quote
    cols = ", ".join(quote(c) for c in columns)
    source = quote(table)
    plain = f"SELECT {cols} FROM {source} LIMIT {rows_per_table}"
    query = plain
    if db.backend == "postgresql":
        # Bounded sampling on a server: a large table is read through TABLESAMPLE, so the cost
        # does not grow with the table (the same rule as value examples).
        with get_engine(db).connect() as conn:
            from sqlalchemy import text

            estimate = conn.execute(
                text("SELECT reltuples FROM pg_class WHERE oid = to_regclass(:t)"), {"t": source}
            ).scalar()
        if estimate and estimate > rows_per_table * 2:
            percent = min(100.0, 100.0 * rows_per_table * 2 / float(estimate))
            query = (
                f"SELECT {cols} FROM {source} TABLESAMPLE SYSTEM ({percent:.6f}) "
                f"LIMIT {rows_per_table}"
            )
    result = execute_sql(db, query, timeout=timeout, max_rows=rows_per_table)
    rows = list(result.rows) if result.outcome in (Outcome.OK, Outcome.EMPTY_RESULT) else []
    if query is not plain and len(rows) < rows_per_table // 2:
        # SYSTEM sampling picks whole pages, and a small share of a small table can pick none.
        result = execute_sql(db, plain, timeout=timeout, max_rows=rows_per_table)
        rows = list(result.rows) if result.outcome in (Outcome.OK, Outcome.EMPTY_RESULT) else []
    return rows


_SCHEMA_SQL = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT);
CREATE TABLE columns (id INTEGER PRIMARY KEY, tbl TEXT, col TEXT, first_id INTEGER,
    n_values INTEGER);
CREATE TABLE vals (id INTEGER PRIMARY KEY, column_id INTEGER, value TEXT, norm TEXT);
CREATE VIRTUAL TABLE vals_fts USING fts5(norm, tokenize='trigram', content='', columnsize=0);
CREATE TABLE joins (tbl TEXT, col TEXT, ref_tbl TEXT, ref_col TEXT);
"""


class ValueIndex:
    """An open value index: `lookup` phrases, read-only and thread-safe.

    Its read-only connections are shared by every thread, one at a time: as many as lookups
    ran at once, not one per thread that ever looked up (an eval's node threads are many and
    new in every run, and a connection's first query costs about as much as a lookup)."""

    def __init__(self, path: Path, stats: IndexStats) -> None:
        self.path = path
        self.stats = stats
        self._idle: list[sqlite3.Connection] = []
        self._idle_lock = threading.Lock()

    @contextmanager
    def _connection(self) -> Iterator[sqlite3.Connection]:
        with self._idle_lock:
            conn = self._idle.pop() if self._idle else None
        if conn is None:
            conn = sqlite3.connect(f"file:{self.path}?mode=ro", uri=True, check_same_thread=False)
        try:
            yield conn
        finally:
            with self._idle_lock:
                self._idle.append(conn)

    def lookup(
        self,
        phrases: Iterable[str],
        *,
        per_phrase: int = 50,
        min_score: float = 0.8,
        exact_per_phrase: int = 5000,
    ) -> list[ValueMatch]:
        """Stored values matching any phrase: every column that stores the phrase exactly (up
        to `exact_per_phrase`: a name stored in hundreds of tables must still be found in the
        one the question is about, which the caller chooses by the table's relevance), then
        substring candidates from the trigram index (each half of a phrase too, so one typo
        still finds it), re-scored by fuzzy ratio."""
        with self._connection() as conn:
            return self._lookup(conn, phrases, per_phrase, min_score, exact_per_phrase)

    def _lookup(
        self,
        conn: sqlite3.Connection,
        phrases: Iterable[str],
        per_phrase: int,
        min_score: float,
        exact_per_phrase: int,
    ) -> list[ValueMatch]:
        # Longest first: a value the question names in full explains its words, which are
        # then not looked up alone ("Berka" of "Marli Berka").
        ordered = sorted(phrases, key=lambda p: -len(p.split()))
        norms = [normalise(phrase) for phrase in ordered]
        # Two statements per question, not one per exact form and probe (about 26): each
        # statement's own cost was half the lookup's. The plan below is the one-by-one
        # lookup's, replayed over the rows both statements read.
        asked = [f for n in norms if n for f in exact_forms(n)]
        exact_rows = _exact_rows(conn, asked, exact_per_phrase)
        plan: list[tuple[str, str, list[str], list[str]]] = []
        seen: set[str] = set()
        stored: list[str] = []  # phrases stored exactly, padded with spaces
        for phrase, norm in zip(ordered, norms, strict=True):
            if not norm or norm in seen or any(f" {norm} " in whole for whole in stored):
                continue
            seen.add(norm)
            forms = exact_forms(norm)
            found_exactly = any(exact_rows.get(form) for form in forms)
            if found_exactly and " " in norm:
                stored.append(f" {norm} ")
            # Short codes ("CA", a quoted 'h') match only exactly. A phrase stored exactly
            # has no typo to forgive: its halves are not probed, only the phrase itself
            # (inside longer values: "Fresno" in "Fresno County ...").
            probes = [] if len(norm) < 3 else [norm] if found_exactly else _probes(norm)
            plan.append((phrase, norm, forms, probes))
        # n-grams share words: each substring is read once
        probed = _probe_rows(
            conn, list(dict.fromkeys(p for *_, ps in plan for p in ps)), per_phrase
        )
        best: dict[tuple[int, str], ValueMatch] = {}
        for phrase, norm, forms, probes in plan:
            for form in forms:
                for column_id, value, tbl, col in exact_rows.get(form, []):
                    best[(column_id, value)] = ValueMatch(tbl, col, value, 1.0, phrase)
            for probe in probes:
                for column_id, value, tbl, col, value_norm in probed[probe]:
                    score = match_score(norm, value_norm)
                    if score < min_score:
                        continue
                    key = (column_id, value)
                    if key not in best or best[key].score < score:
                        best[key] = ValueMatch(tbl, col, value, round(score, 4), phrase)
        return sorted(best.values(), key=lambda m: (-m.score, len(m.value), m.table, m.column))

    def small_columns(self, most: int = 3) -> dict[tuple[str, str], list[str]]:
        """Columns holding at most `most` distinct values (flags such as 'T'/'F'), with them:
        a question that names such a column means one of its values. Read once."""
        cached = getattr(self, "_small", None)
        if cached is None:
            with self._connection() as conn:
                rows = conn.execute(
                    "SELECT c.tbl, c.col, v.value FROM columns c JOIN vals v "
                    "ON v.id BETWEEN c.first_id AND c.first_id + c.n_values - 1 "
                    "WHERE c.n_values <= ?",
                    (most,),
                ).fetchall()
            cached = {}
            for tbl, col, value in rows:
                cached.setdefault((tbl, col), []).append(value)
            self._small = cached
        return cached

    def joins(self) -> list[ForeignKey]:
        """The joins inferred from the values when the index was built. Read once."""
        cached: list[ForeignKey] | None = getattr(self, "_joins", None)
        if cached is None:
            with self._connection() as conn:
                rows = conn.execute("SELECT tbl, col, ref_tbl, ref_col FROM joins").fetchall()
            cached = [ForeignKey(*row) for row in rows]
            self._joins = cached
        return cached

    def close(self) -> None:
        """Close the idle connections (one in use is closed when its lookup gives it back to
        an index that is used again, or with the process)."""
        with self._idle_lock:
            idle, self._idle = self._idle, []
        for conn in idle:
            conn.close()

    def _forget_connections(self) -> None:
        """In a forked child: the parent's connections are not this process's to use."""
        self._idle, self._idle_lock = [], threading.Lock()


# Bound parameters per statement, well under SQLite's smallest default limit (999).
_BATCH = 200


def _exact_rows(
    conn: sqlite3.Connection, forms: list[str], limit: int
) -> dict[str, list[tuple[int, str, str, str]]]:
    """Each form's stored values (at most `limit`: a common value may sit in thousands of
    columns), as one `norm = ?` statement per form would read them, in one statement per
    `_BATCH` forms."""
    out: dict[str, list[tuple[int, str, str, str]]] = {}
    unique = list(dict.fromkeys(forms))
    for start in range(0, len(unique), _BATCH):
        chunk = unique[start : start + _BATCH]
        rows = conn.execute(
            "SELECT norm, column_id, value, tbl, col FROM (SELECT v.norm, v.id, v.column_id, "
            "v.value, c.tbl, c.col, ROW_NUMBER() OVER (PARTITION BY v.norm ORDER BY v.id) AS k "
            "FROM vals v JOIN columns c ON c.id = v.column_id "
            f"WHERE v.norm IN ({','.join('?' * len(chunk))})) WHERE k <= ? ORDER BY norm, id",
            [*chunk, limit],
        ).fetchall()
        for norm, column_id, value, tbl, col in rows:
            out.setdefault(norm, []).append((column_id, value, tbl, col))
    return out


def _probe_rows(
    conn: sqlite3.Connection, probes: list[str], limit: int
) -> dict[str, list[tuple[int, str, str, str, str]]]:
    """Each probe's trigram-index candidates (at most `limit`), as one `MATCH` statement per
    probe would read them: one compound statement per `_BATCH` probes, tagged by position."""
    out: dict[str, list[tuple[int, str, str, str, str]]] = {p: [] for p in probes}
    arm = (
        "SELECT * FROM (SELECT {n}, v.column_id, v.value, c.tbl, c.col, v.norm FROM vals_fts "
        "JOIN vals v ON v.id = vals_fts.rowid JOIN columns c ON c.id = v.column_id "
        "WHERE vals_fts MATCH ? LIMIT ?)"
    )
    for start in range(0, len(probes), _BATCH):
        chunk = probes[start : start + _BATCH]
        sql = " UNION ALL ".join(arm.format(n=n) for n in range(len(chunk)))
        params: list[object] = []
        for probe in chunk:
            params += ['"' + probe.replace('"', '""') + '"', limit]
        for n, column_id, value, tbl, col, norm in conn.execute(sql, params).fetchall():
            out[chunk[n]].append((column_id, value, tbl, col, norm))
    return out


def _probes(norm: str) -> list[str]:
    """The substrings a normalised phrase is looked up by: itself and its two halves, so that
    one typo still leaves a half intact. A phrase of several words is cut between words: a
    half that starts or ends inside a word ("o kalom" of "to kalomi") has common trigrams
    and few matches, so the index must read long posting lists to the end for nothing,
    and such probes made the slowest lookups (measured when the index was introduced)."""
    parts = norm.split()
    if len(parts) > 1:
        middle = len(parts) // 2
        halves = [_trimmed(parts[:middle]), _trimmed(parts[middle:])]
    elif len(norm) >= 6:
        halves = [norm[: len(norm) // 2], norm[len(norm) // 2 :]]
    else:
        halves = []
    return [p for p in dict.fromkeys([norm, *halves]) if len(p) >= 3]


def _trimmed(parts: list[str]) -> str:
    """Words without the short ones at either end ("to kalomi" -> "kalomi"): a two-letter
    word is a function word more often than part of a name, and its trigrams are common."""
    while parts and len(parts[0]) < 3:
        parts = parts[1:]
    while parts and len(parts[-1]) < 3:
        parts = parts[:-1]
    return " ".join(parts)


def exact_forms(norm: str) -> list[str]:
    """The stored forms a normalised phrase names exactly: itself, and the singular of a plural
    ("cats" names "cat")."""
    return [norm, norm[:-1]] if len(norm) > 3 and norm.endswith("s") else [norm]


def match_score(phrase: str, value: str) -> float:
    """How well a normalised phrase names a normalised stored value, 0..1.

    The same text scores 1; a value that contains the phrase as whole words ("fresno" in
    "fresno county office of education") scores by how much of the value the phrase covers,
    but at least 0.85; otherwise the fuzzy ratio over the best-aligned part (typos)."""
    if phrase == value:
        return 1.0
    if f" {phrase} " in f" {value} ":  # normalised: words are separated by one space
        return max(0.85, len(phrase) / len(value))
    whole = fuzz.ratio(phrase, value) / 100.0
    if len(value) < len(phrase):
        return whole  # a short value inside a long phrase ('c' in "math course") says nothing
    partial = fuzz.partial_ratio(phrase, value) / 100.0
    # A partial match inside a much longer value is weaker evidence than a whole match.
    coverage = min(1.0, len(phrase) / max(1, len(value)))
    # A several-word phrase found almost whole inside a value is a typo in a name; one short
    # word almost found is more often a different word.
    weight = 0.85 + 0.15 * coverage if " " in phrase else 0.75 + 0.2 * coverage
    return max(whole, partial * weight)


# --------------------------------------------------------------------------- building

_open: dict[Path, ValueIndex] = {}
_open_lock = threading.Lock()


def index_path(db: DatabaseRef) -> Path:
    """Where `db`'s index lives: beside the schema cache, keyed by the database's identity."""
    key = (db.identity(), db.dialect, INDEX_FORMAT_VERSION)
    digest = hashlib.sha256(repr(key).encode()).hexdigest()[:24]
    return cache_root() / "value_index" / f"{db.name}-{digest}.sqlite"


def open_value_index(
    db: DatabaseRef,
    schema: SchemaInfo,
    *,
    refresh: bool = False,
    rows_per_table: int = 20000,
    values_per_column: int = 2000,
    max_values: int = 1_000_000,
    timeout: float = 30.0,
) -> ValueIndex:
    """`db`'s value index, built on first use (or when `refresh`), read from disk after."""
    path = index_path(db)
    with _open_lock:
        hit = _open.get(path)
        if hit is not None and not refresh:
            return hit
        if hit is not None:
            hit.close()
            _open.pop(path, None)
        if path.is_file() and not refresh:
            stats = _read_stats(path)
            if stats is not None:
                index = ValueIndex(path, stats)
                _open[path] = index
                return index
        stats = build_value_index(
            db,
            schema,
            path,
            rows_per_table=rows_per_table,
            values_per_column=values_per_column,
            max_values=max_values,
            timeout=timeout,
        )
        index = ValueIndex(path, stats)
        _open[path] = index
        return index


def _read_stats(path: Path) -> IndexStats | None:
    try:
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        try:
            meta = dict(conn.execute("SELECT key, value FROM meta").fetchall())
        finally:
            conn.close()
        if meta.get("complete") != "1":
            return None
        return IndexStats(
            values=int(meta["values"]),
            columns=int(meta["columns"]),
            build_seconds=float(meta["build_seconds"]),
            size_bytes=path.stat().st_size,
            rebuilt=False,
        )
    except (sqlite3.Error, KeyError, ValueError):
        return None  # a corrupt or half-written index is rebuilt


def build_value_index(
    db: DatabaseRef,
    schema: SchemaInfo,
    path: Path,
    *,
    rows_per_table: int = 20000,
    values_per_column: int = 2000,
    max_values: int = 1_000_000,
    timeout: float = 30.0,
) -> IndexStats:
    """Write `db`'s value index to `path` (atomically: a temporary file, then a rename)."""
    started = time.perf_counter()
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(f".{os.getpid()}.{threading.get_ident()}.tmp")
    tmp.unlink(missing_ok=True)
    conn = sqlite3.connect(tmp)
    total = 0
    column_count = 0
    try:
        conn.executescript(_SCHEMA_SQL)
        plan = [(t.name, _indexable_columns(schema, t.name)) for t in schema.tables]
        per_column = values_per_column
        for table_name, columns in plan:
            if total >= max_values:
                break
            if not columns:
                continue
            rows = _read_rows(db, table_name, columns, rows_per_table, timeout)
            for position, column in enumerate(columns):
                values = _column_values((r[position] for r in rows), per_column)
                values = values[: max(0, max_values - total)]
                if not values:
                    continue
                column_count += 1
                first = total + 1
                column_id = conn.execute(
                    "INSERT INTO columns (tbl, col, first_id, n_values) VALUES (?, ?, ?, ?)",
                    (table_name, column, first, len(values)),
                ).lastrowid
                rows_in = [(first + i, column_id, v, normalise(v)) for i, v in enumerate(values)]
                conn.executemany("INSERT INTO vals VALUES (?, ?, ?, ?)", rows_in)
                conn.executemany(
                    "INSERT INTO vals_fts (rowid, norm) VALUES (?, ?)",
                    [(r[0], r[3]) for r in rows_in],
                )
                total += len(values)
        joins = _inferred_joins(db, schema, timeout)
        conn.executemany(
            "INSERT INTO joins VALUES (?, ?, ?, ?)",
            [(fk.table, fk.column, fk.ref_table, fk.ref_column) for fk in joins],
        )
        seconds = time.perf_counter() - started
        conn.executemany(
            "INSERT INTO meta VALUES (?, ?)",
            [
                ("values", str(total)),
                ("columns", str(column_count)),
                ("build_seconds", f"{seconds:.3f}"),
                ("database", db.safe_url),
                ("complete", "1"),
            ],
        )
        conn.commit()
        conn.execute("CREATE INDEX vals_norm ON vals (norm)")
        conn.execute("INSERT INTO vals_fts(vals_fts) VALUES ('optimize')")
        conn.commit()
    finally:
        conn.close()
    tmp.replace(path)
    return IndexStats(total, column_count, seconds, path.stat().st_size, rebuilt=True)


def _inferred_joins(db: DatabaseRef, schema: SchemaInfo, timeout: float) -> list[ForeignKey]:
    quote = get_engine(db).dialect.identifier_preparer.quote

    def query(sql: str) -> list[tuple[Any, ...]]:
        result = execute_sql(db, sql, timeout=timeout, max_rows=10)
        return list(result.rows) if result.outcome == Outcome.OK else []

    return infer_joins(schema, quote, query)


def clear_value_indexes() -> None:
    """Close every open index (tests; a process that rebuilt files behind our back)."""
    with _open_lock:
        for index in _open.values():
            index.close()
        _open.clear()


def _forget_connections_in_child() -> None:
    global _open_lock
    _open_lock = threading.Lock()
    for index in _open.values():
        index._forget_connections()


os.register_at_fork(after_in_child=_forget_connections_in_child)
