"""Exact set match, as the official Spider / SParC / CoSQL evaluator (test-suite-sql-eval,
``evaluation.py --etype match``) computes it.

Both queries are parsed into the official structure with the names mapped to the database's
schema: tables as ``__table__``, columns as ``__table.column__``, ``*`` as ``__all__`` (the
schema is read from the SQLite file, as the official `get_schema` does: lower-cased names of
every table and its columns). Then, as the official defaults do:

- values are dropped (``DISABLE_VALUE``): a literal never decides a match, a subquery does;
- DISTINCT is dropped from the select list and column units (``DISABLE_DISTINCT``), but not
  inside subqueries of conditions, which the official rebuild does not reach;
- a column joined by a foreign key is replaced by the first column of its key group (the
  ``kmap`` of tables.json), when its table is in the query's FROM;
- each clause is compared as the official partial matches do (select and where as multisets,
  group by on column names only, order by in order and with LIMIT present or not, the set of
  and/or, nested set operations recursively, and the set of keywords), and the FROM tables as a
  sorted list.

A prediction the official parser could not read (an unknown table or column, an alias named
like a table, a non-integer LIMIT, unbalanced quotes) is scored as the empty query: no match.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from macsql.evals.spider_sql_parse import HardnessParseError, _Parser, tokenize

_WHERE_OPS = ("not", "between", "=", ">", "<", ">=", "<=", "!=", "in", "like", "is", "exists")
IN_OP = _WHERE_OPS.index("in")
LIKE_OP = _WHERE_OPS.index("like")

EMPTY_QUERY: dict[str, Any] = {
    "except": None,
    "from": {"conds": [], "table_units": []},
    "groupBy": [],
    "having": [],
    "intersect": None,
    "limit": None,
    "orderBy": [],
    "select": [False, []],
    "union": None,
    "where": [],
}
"""What the official evaluator scores a prediction it cannot parse as."""


class Schema:
    """A database's tables and columns, lower-cased, as the official evaluator reads them."""

    def __init__(self, tables: Mapping[str, Sequence[str]]) -> None:
        self.tables = {t.lower(): [c.lower() for c in cols] for t, cols in tables.items()}
        self.ids: dict[str, str] = {"*": "__all__"}
        for table, cols in self.tables.items():
            for col in cols:
                self.ids[f"{table}.{col}"] = f"__{table}.{col}__"
        for table in self.tables:
            self.ids[table] = f"__{table}__"

    @classmethod
    def of_sqlite(cls, path: str | Path) -> Schema:
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        try:
            names = [
                r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")
            ]
            return cls(
                {
                    name: [r[1] for r in conn.execute(f"PRAGMA table_info('{name}')")]
                    for name in names
                }
            )
        finally:
            conn.close()


def foreign_key_map(entry: Mapping[str, Any]) -> dict[str, str]:
    """tables.json's foreign keys as the official `build_foreign_key_map` groups them: each
    column of a group maps to the group's lowest-numbered column. A key pair joins the first
    group that holds either of its columns (groups are not merged, as in the official)."""
    tables = entry["table_names_original"]
    names = [
        f"__{tables[t].lower()}.{c.lower()}__" if t >= 0 else "__all__"
        for t, c in entry["column_names_original"]
    ]
    groups: list[set[int]] = []
    for first, second in entry.get("foreign_keys") or []:
        group = next((g for g in groups if first in g or second in g), None)
        if group is None:
            group = set()
            groups.append(group)
        group.update((first, second))
    mapping: dict[str, str] = {}
    for group in groups:
        ordered = sorted(group)
        for column in ordered:
            mapping[names[column]] = names[ordered[0]]
    return mapping


class _SchemaParser(_Parser):
    """The official `get_sql`: the project's parser with names mapped to `schema`."""

    def __init__(self, tokens: Sequence[str], schema: Schema) -> None:
        super().__init__(tokens)
        self.schema = schema
        self.aliases: dict[str, str] = {}
        for i, tok in enumerate(self.toks):
            if tok == "as":  # every AS, a column's too; one at the very end is an error
                self.aliases[self.toks[i + 1]] = self.toks[i - 1]
        for table in schema.tables:
            if table in self.aliases:
                raise HardnessParseError(f"alias {table} has the same name as a table")
            self.aliases[table] = table
        self.scopes: list[list[str]] = []

    def _enter_query(self) -> None:
        self.scopes.append([])

    def _leave_query(self) -> None:
        self.scopes.pop()

    def _table(self, tok: str) -> Any:
        if tok not in self.aliases:
            raise HardnessParseError(f"unknown table {tok!r}")
        table = self.aliases[tok]
        if table not in self.schema.ids:
            raise HardnessParseError(f"unknown table {table!r}")
        self.scopes[-1].append(table)
        return self.schema.ids[table]

    def _column(self, tok: str) -> Any:
        if tok == "*":
            return self.schema.ids["*"]
        if "." in tok:
            parts = tok.split(".")
            if len(parts) != 2 or parts[0] not in self.aliases:
                raise HardnessParseError(f"unknown column {tok!r}")
            key = f"{self.aliases[parts[0]]}.{parts[1]}"
            if key not in self.schema.ids:
                raise HardnessParseError(f"unknown column {tok!r}")
            return self.schema.ids[key]
        defaults = self.scopes[-1] if self.scopes else []
        if not defaults:
            raise HardnessParseError("a column outside any FROM clause")
        for alias in defaults:
            table = self.aliases.get(alias, alias)
            if tok in self.schema.tables.get(table, ()):
                return self.schema.ids[f"{table}.{tok}"]
        raise HardnessParseError(f"unknown column {tok!r}")

    def _limit(self, tok: str) -> Any:
        try:
            return int(tok)
        except ValueError:
            raise HardnessParseError(f"LIMIT {tok!r} is not an integer") from None


def parse_with_schema(sql: str, schema: Schema) -> dict[str, Any]:
    """The official structure of `sql` over `schema`; `HardnessParseError` when the official
    parser would fail on it."""
    try:
        return _SchemaParser(tokenize(sql), schema).query(0)[1]
    except HardnessParseError:
        raise
    except (IndexError, ValueError, TypeError, KeyError) as exc:
        raise HardnessParseError(str(exc)) from exc


# ---------------------------------------------------------------------------------------------
# The official rebuild: values out, DISTINCT out, foreign-key columns to their group's first


def _without_values(sql: Any) -> Any:
    if sql is None:
        return None
    out = dict(sql)
    out["from"] = {**sql["from"], "conds": _condition_without_values(sql["from"]["conds"])}
    out["having"] = _condition_without_values(sql["having"])
    out["where"] = _condition_without_values(sql["where"])
    for op in ("intersect", "except", "union"):
        out[op] = _without_values(sql[op])
    return out


def _condition_without_values(condition: list[Any]) -> list[Any]:
    rebuilt: list[Any] = []
    for i, unit in enumerate(condition):
        if i % 2:
            rebuilt.append(unit)
            continue
        negated, op, val_unit, val1, val2 = unit
        val1 = _without_values(val1) if isinstance(val1, dict) else None
        val2 = _without_values(val2) if isinstance(val2, dict) else None
        rebuilt.append((negated, op, val_unit, val1, val2))
    return rebuilt


def _valid_columns(table_units: list[Any], schema: Schema) -> set[str]:
    prefixes = {unit[1][:-2] for unit in table_units if unit[0] == "table_unit"}
    return {v for v in schema.ids.values() if "." in v and v[: v.index(".")] in prefixes}


class _Columns:
    def __init__(self, valid: set[str], kmap: Mapping[str, str]) -> None:
        self.valid, self.kmap = valid, kmap

    def col_unit(self, unit: Any) -> Any:
        if unit is None:
            return None
        agg, column, _distinct = unit
        if column in self.kmap and column in self.valid:
            column = self.kmap[column]
        return (agg, column, None)

    def val_unit(self, unit: Any) -> Any:
        if unit is None:
            return None
        op, left, right = unit
        return (op, self.col_unit(left), self.col_unit(right))

    def condition(self, condition: list[Any]) -> list[Any]:
        return [
            unit if i % 2 else (unit[0], unit[1], self.val_unit(unit[2]), unit[3], unit[4])
            for i, unit in enumerate(condition)
        ]

    def query(self, sql: Any) -> Any:
        if sql is None:
            return None
        out = dict(sql)
        out["select"] = (None, [(agg, self.val_unit(vu)) for agg, vu in sql["select"][1]])
        out["from"] = {
            "table_units": [
                (kind, self.col_unit(x) if isinstance(x, tuple) else x)
                for kind, x in sql["from"]["table_units"]
            ],
            "conds": self.condition(sql["from"]["conds"]),
        }
        out["where"] = self.condition(sql["where"])
        out["groupBy"] = [self.col_unit(u) for u in sql["groupBy"]]
        if sql["orderBy"]:
            direction, units = sql["orderBy"]
            out["orderBy"] = (direction, [self.val_unit(u) for u in units])
        out["having"] = self.condition(sql["having"])
        for op in ("intersect", "except", "union"):
            out[op] = self.query(sql[op])
        return out


def rebuild(sql: dict[str, Any], schema: Schema, kmap: Mapping[str, str]) -> dict[str, Any]:
    """The structure the official evaluator compares (`rebuild_sql_val`, `rebuild_sql_col`)."""
    valid = _valid_columns(sql["from"]["table_units"], schema)
    return _Columns(valid, kmap).query(_without_values(sql))


# ---------------------------------------------------------------------------------------------
# The official comparison


def _scores(count: int, pred_total: int, label_total: int) -> int:
    """The official `get_scores`, reduced to its F1 (1 or 0)."""
    if pred_total != label_total:
        return 0
    return 1 if count == pred_total else 0


def _multiset_hits(pred: list[Any], label: list[Any]) -> int:
    left = list(label)
    hits = 0
    for unit in pred:
        if unit in left:
            hits += 1
            left.remove(unit)
    return hits


def _select(pred: Any, label: Any) -> tuple[int, int]:
    p, g = pred["select"][1], label["select"][1]
    return (
        _scores(_multiset_hits(p, g), len(p), len(g)),
        _scores(_multiset_hits([u[1] for u in p], [u[1] for u in g]), len(p), len(g)),
    )


def _where(pred: Any, label: Any) -> tuple[int, int]:
    p, g = pred["where"][::2], label["where"][::2]
    return (
        _scores(_multiset_hits(p, g), len(p), len(g)),
        _scores(_multiset_hits([u[2] for u in p], [u[2] for u in g]), len(p), len(g)),
    )


def _group(pred: Any, label: Any) -> int:
    def names(sql: Any) -> list[str]:
        cols = [unit[1] for unit in sql["groupBy"]]
        return [c.split(".")[1] if "." in c else c for c in cols]

    p, g = names(pred), names(label)
    return _scores(_multiset_hits(p, g), len(p), len(g))


def _having(pred: Any, label: Any) -> int:
    p_total = 1 if pred["groupBy"] else 0
    g_total = 1 if label["groupBy"] else 0
    same = (
        p_total == g_total == 1
        and [u[1] for u in pred["groupBy"]] == [u[1] for u in label["groupBy"]]
        and pred["having"] == label["having"]
    )
    return _scores(1 if same else 0, p_total, g_total)


def _order(pred: Any, label: Any) -> int:
    p_total = 1 if pred["orderBy"] else 0
    g_total = 1 if label["orderBy"] else 0
    same = (
        bool(label["orderBy"])
        and pred["orderBy"] == label["orderBy"]
        and ((pred["limit"] is None) == (label["limit"] is None))
    )
    return _scores(1 if same else 0, p_total, g_total)


def _and_or(pred: Any, label: Any) -> int:
    p, g = set(pred["where"][1::2]), set(label["where"][1::2])
    if p == g:
        return 1
    return _scores(0, len(g), len(p))


def _nested(pred: Any, label: Any) -> int:
    totals = [0, 0, 0]  # label, pred, hits
    for op in ("intersect", "except", "union"):
        p, g = pred[op], label[op]
        totals[0] += g is not None
        totals[1] += p is not None
        if p is not None and g is not None:
            totals[2] += exact_match_structures(p, g)
    return _scores(totals[2], totals[1], totals[0])


def keywords(sql: Any) -> set[str]:
    found: set[str] = set()
    for key, word in (("where", "where"), ("groupBy", "group"), ("having", "having")):
        if sql[key]:
            found.add(word)
    if sql["orderBy"]:
        found.update((sql["orderBy"][0], "order"))
    for key in ("limit", "except", "union", "intersect"):
        if sql[key] is not None:
            found.add(key)
    conditions = sql["from"]["conds"] + sql["where"] + sql["having"]
    if "or" in conditions[1::2]:
        found.add("or")
    units = sql["from"]["conds"][::2] + sql["where"][::2] + sql["having"][::2]
    if any(u[0] for u in units):
        found.add("not")
    if any(u[1] == IN_OP for u in units):
        found.add("in")
    if any(u[1] == LIKE_OP for u in units):
        found.add("like")
    return found


def _keywords(pred: Any, label: Any) -> int:
    p, g = keywords(pred), keywords(label)
    return _scores(len(p & g), len(p), len(g))


def partial_matches(pred: Any, label: Any) -> dict[str, int]:
    """The official partial matches' F1 (1 or 0), by the official names."""
    select, select_no_agg = _select(pred, label)
    where, where_no_op = _where(pred, label)
    return {
        "select": select,
        "select(no AGG)": select_no_agg,
        "where": where,
        "where(no OP)": where_no_op,
        "group(no Having)": _group(pred, label),
        "group": _having(pred, label),
        "order": _order(pred, label),
        "and/or": _and_or(pred, label),
        "IUEN": _nested(pred, label),
        "keywords": _keywords(pred, label),
    }


def _sorted_units(units: list[Any]) -> list[Any]:
    try:
        return sorted(units)
    except TypeError:  # two subqueries in one FROM: the official evaluator stops there
        return sorted(units, key=repr)


def exact_match_structures(pred: Any, label: Any) -> int:
    """The official `eval_exact_match` on two rebuilt structures: 1 or 0."""
    if any(score != 1 for score in partial_matches(pred, label).values()):
        return 0
    if label["from"]["table_units"]:
        same = _sorted_units(label["from"]["table_units"]) == _sorted_units(
            pred["from"]["table_units"]
        )
        return 1 if same else 0
    return 1


class ExactMatcher:
    """Exact set match of predictions against gold, per database; thread-safe."""

    def __init__(self, tables: Mapping[str, Mapping[str, Any]]) -> None:
        """`tables`: tables.json entries by db_id (for the foreign-key groups)."""
        self._kmaps = {db: foreign_key_map(entry) for db, entry in tables.items()}
        self._schemas: dict[str, Schema] = {}
        self._lock = threading.Lock()

    def schema(self, db_file: str) -> Schema:
        with self._lock:
            cached = self._schemas.get(db_file)
        if cached is None:
            cached = Schema.of_sqlite(db_file)
            with self._lock:
                self._schemas[db_file] = cached
        return cached

    def match(self, db_id: str, db_file: str, pred_sql: str, gold_sql: str) -> bool:
        """Whether `pred_sql` exactly set-matches `gold_sql` on `db_file`'s schema. Raises
        `HardnessParseError` when the gold itself cannot be parsed."""
        schema = self.schema(db_file)
        kmap = self._kmaps.get(db_id, {})
        gold = rebuild(parse_with_schema(gold_sql, schema), schema, kmap)
        try:
            pred = parse_with_schema(pred_sql.replace(" value ", " 1 "), schema)
        except HardnessParseError:
            pred = EMPTY_QUERY
        return exact_match_structures(rebuild(pred, schema, kmap), gold) == 1
