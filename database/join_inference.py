"""Joins a database does not declare, inferred from its values when the value index is built.

Dumps often declare no keys (Spider 2.0's SQLite files declare none), and role-named columns
(`home_player_1` holding `Player.player_api_id`) escape any rule on names alone. A column
joins a key when its values are included in the key's: at least MIN_DISTINCT distinct values of
it (a sample of up to SAMPLE), of which at least INCLUSION are values of the key. A key is a
declared primary key, or in a table that declares none, an id-like column whose sampled values
are all distinct. Only pairs whose names share a word are tested (the column's name and the
key's table or column name), so the cost stays small on wide schemas; of several keys a column
joins, the one in the table whose name shares the longest prefix with its own is kept (the same
database of a catalog). Composite primary keys are tested as tuples, on columns of the other
table with the same names as the key's parts.

The result is cached with the value index (the `joins` table of its file), so it is computed
once per database version.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from macsql.database.schema import ForeignKey, SchemaInfo, TableInfo

SAMPLE = 200
MIN_DISTINCT = 3
INCLUSION = 0.95
_GENERIC = frozenset({"id", "key", "code", "no", "num", "number", "nr", "pk", "fk", "ref"})
_ID_LIKE = re.compile(r"(^id$|_id$|[a-z0-9]Id$|ID$|_key$|_code$|_no$|_num$|^code$)")
_JOINABLE = ("INT", "CHAR", "TEXT", "STRING", "NUM", "DEC", "UUID", "")

Query = Callable[[str], list[tuple[Any, ...]]]


def _words(name: str) -> set[str]:
    spaced = re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", name)
    out = set()
    for w in re.split(r"[^A-Za-z0-9]+", spaced.lower()):
        if len(w) > 3 and w.endswith("s") and not w.endswith("ss"):
            w = w[:-1]
        if w and not w.isdigit():
            out.add(w)
    return out


def _joinable(kind: str) -> bool:
    upper = (kind or "").upper()
    return any(t in upper for t in _JOINABLE if t) or upper in ("", "ANY")


def _keys(schema: SchemaInfo, quote: Callable[[str], str], query: Query) -> list[tuple[str, str]]:
    """(table, column) of single-column keys: declared, or unique id-like columns."""
    out = []
    for table in schema.tables:
        declared = [c.name for c in table.columns if c.primary_key]
        if len(declared) == 1:
            out.append((table.name, declared[0]))
            continue
        if declared:
            continue
        for col in table.columns:
            if not _ID_LIKE.search(col.name) or not _joinable(col.type):
                continue
            rows = query(
                f"SELECT count({quote(col.name)}), count(DISTINCT {quote(col.name)}) FROM "
                f"(SELECT {quote(col.name)} FROM {quote(table.name)} LIMIT 20000) AS s"
            )
            if rows and rows[0][0] and rows[0][0] == rows[0][1] and rows[0][0] >= MIN_DISTINCT:
                out.append((table.name, col.name))
    return out


def _prefix(a: str, b: str) -> int:
    """How many leading characters two table names share (the same database of a catalog)."""
    n = 0
    for x, y in zip(a.lower(), b.lower(), strict=False):
        if x != y:
            break
        n += 1
    return n


def _included(
    quote: Callable[[str], str],
    query: Query,
    source: str,
    columns: list[str],
    target: str,
    keys: list[str],
) -> bool:
    picked = ", ".join(f"{quote(c)} AS v{i}" for i, c in enumerate(columns))
    not_null = " AND ".join(f"{quote(c)} IS NOT NULL" for c in columns)
    on = " AND ".join(f"k.{quote(k)} = s.v{i}" for i, k in enumerate(keys))
    rows = query(
        f"SELECT count(*), count(k.{quote(keys[0])}) FROM (SELECT DISTINCT {picked} FROM "
        f"{quote(source)} WHERE {not_null} LIMIT {SAMPLE}) AS s LEFT JOIN "
        f"(SELECT DISTINCT {', '.join(quote(k) for k in keys)} FROM {quote(target)}) AS k "
        f"ON {on}"
    )
    if not rows or not rows[0][0]:
        return False
    total, found = rows[0][0], rows[0][1]
    return bool(total >= MIN_DISTINCT and found / total >= INCLUSION)


def infer_joins(schema: SchemaInfo, quote: Callable[[str], str], query: Query) -> list[ForeignKey]:
    """Joins the values show and the schema does not declare. `query(sql)` returns rows (an
    empty list when the query fails); `quote` quotes an identifier for the database."""
    declared = {(fk.table, fk.column) for fk in schema.foreign_keys}
    keys = _keys(schema, quote, query)
    key_set = set(keys)
    by_word: dict[str, list[tuple[str, str]]] = {}
    for ref_table, ref_col in keys:
        for w in (_words(ref_table) | _words(ref_col)) - _GENERIC:
            by_word.setdefault(w, []).append((ref_table, ref_col))
    out: list[ForeignKey] = []
    for table in schema.tables:
        for col in table.columns:
            if (table.name, col.name) in declared or (table.name, col.name) in key_set:
                continue
            if col.primary_key or not _joinable(col.type):
                continue
            own = _words(col.name) - _GENERIC
            if not own:
                continue
            shared: dict[tuple[str, str], int] = {}
            for w in own:
                for key in by_word.get(w, ()):
                    if key[0] != table.name:
                        shared[key] = shared.get(key, 0) + 1
            candidates = [
                (_prefix(table.name, ref_table), n, ref_table, ref_col)
                for (ref_table, ref_col), n in shared.items()
            ]
            for _, _, ref_table, ref_col in sorted(candidates, key=lambda c: (-c[0], -c[1]))[:3]:
                if _included(quote, query, table.name, [col.name], ref_table, [ref_col]):
                    out.append(ForeignKey(table.name, col.name, ref_table, ref_col))
                    break
    out += _composite(schema, quote, query, declared)
    return out


def _composite(
    schema: SchemaInfo,
    quote: Callable[[str], str],
    query: Query,
    declared: set[tuple[str, str]],
) -> list[ForeignKey]:
    out = []
    for target in schema.tables:
        parts = [c.name for c in target.columns if c.primary_key]
        if len(parts) < 2:
            continue
        for source in schema.tables:
            if source is target:
                continue
            matching = _same_named(source, parts)
            if matching is None or all((source.name, m) in declared for m in matching):
                continue
            if _included(quote, query, source.name, matching, target.name, parts):
                out += [
                    ForeignKey(source.name, m, target.name, p)
                    for m, p in zip(matching, parts, strict=True)
                ]
    return out


def _same_named(table: TableInfo, parts: list[str]) -> list[str] | None:
    by_lower = {c.name.lower(): c.name for c in table.columns}
    found = [by_lower.get(p.lower()) for p in parts]
    return None if any(f is None for f in found) else [f for f in found if f]
