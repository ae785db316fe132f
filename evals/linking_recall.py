"""Schema- and value-linking recall: what the linking stage kept against what the gold SQL uses.

Gold elements come from sqlglot over the gold SQL: the tables it reads, its columns (qualified
against the schema: an alias or a bare name is resolved to the table that has that column), and
its string literals compared with a column (`=`, `!=`, `LIKE`, `IN`). The measures are
RSL-SQL's, plus value recall, which no paper publishes:

- strict recall: the share of items whose gold tables and columns are all kept;
- column recall: the share of gold columns kept;
- value recall: the share of gold literals for which a stored value of that column was matched
  (equal ignoring case and accents; for LIKE, containing the pattern's text);
- the share of columns kept.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import sqlglot
from sqlglot import exp

from macsql.database.schema import SchemaInfo
from macsql.database.value_index import normalise


@dataclass
class GoldElements:
    tables: set[str] = field(default_factory=set)
    columns: set[tuple[str, str]] = field(default_factory=set)
    literals: list[tuple[str, str, str, bool]] = field(default_factory=list)
    """(table, column, text, is_like_pattern)."""
    error: str | None = None


def gold_elements(sql: str, schema: SchemaInfo, dialect: str = "sqlite") -> GoldElements:
    """The schema elements and compared string literals of `sql`, names as the schema spells
    them. Unknown names (select aliases, derived tables) are left out."""
    try:
        tree = sqlglot.parse_one(sql, read=dialect)
    except (sqlglot.errors.ParseError, sqlglot.errors.TokenError) as exc:
        return GoldElements(error=f"unparseable gold SQL: {exc}")
    out = GoldElements()
    aliases: dict[str, str] = {}
    for node in tree.find_all(exp.Table):
        table = schema.table(node.name)
        if table is None:
            continue
        out.tables.add(table.name)
        aliases[node.name.lower()] = table.name
        if node.alias:
            aliases[node.alias.lower()] = table.name
    query_tables = sorted(out.tables)
    for column in tree.find_all(exp.Column):
        resolved = _resolve(column, aliases, query_tables, schema)
        if resolved is not None:
            out.columns.add(resolved)
    for comparison in tree.find_all(exp.EQ, exp.NEQ, exp.Like, exp.ILike, exp.In):
        for col, text, like in _compared_literals(comparison):
            resolved = _resolve(col, aliases, query_tables, schema)
            if resolved is not None:
                out.literals.append((*resolved, text, like))
    return out


def _resolve(
    column: exp.Column, aliases: dict[str, str], tables: list[str], schema: SchemaInfo
) -> tuple[str, str] | None:
    qualifier = column.table.lower() if column.table else ""
    candidates = [aliases[qualifier]] if qualifier in aliases else ([] if qualifier else tables)
    for name in candidates:
        table = schema.table(name)
        col = table.column(column.name) if table else None
        if table is not None and col is not None:
            return table.name, col.name
    return None


def _compared_literals(node: Any) -> Iterable[tuple[exp.Column, str, bool]]:
    like = isinstance(node, exp.Like | exp.ILike)
    if isinstance(node, exp.In):
        subject = node.this
        if isinstance(subject, exp.Column):
            for item in node.expressions:
                if isinstance(item, exp.Literal) and item.is_string:
                    yield subject, item.this, False
        return
    left, right = node.args.get("this"), node.args.get("expression")
    for a, b in ((left, right), (right, left)):
        if isinstance(a, exp.Column) and isinstance(b, exp.Literal) and b.is_string:
            yield a, b.this, like


def literal_recalled(literal: tuple[str, str, str, bool], matched: Iterable[Any]) -> bool:
    """Whether a matched value (anything with table, column, value) of the literal's column
    is the literal (ignoring case and accents), or for LIKE contains its text."""
    table, column, text, like = literal
    wanted = normalise(text.replace("%", " ").replace("_", " ") if like else text)
    for m in matched:
        if m.table.lower() != table.lower() or m.column.lower() != column.lower():
            continue
        value = normalise(str(m.value))
        if value == wanted or (like and wanted and wanted in value):
            return True
    return False


@dataclass
class ItemRecall:
    db_id: str
    gold: GoldElements
    kept: dict[str, set[str]]
    """Kept table -> kept columns."""
    total_columns: int
    values: list[Any]

    @property
    def kept_columns(self) -> int:
        return sum(len(c) for c in self.kept.values())

    @property
    def columns_hit(self) -> int:
        return sum(1 for t, c in self.gold.columns if c in self.kept.get(t, set()))

    @property
    def strict(self) -> bool:
        tables_ok = all(t in self.kept for t in self.gold.tables)
        return tables_ok and self.columns_hit == len(self.gold.columns)

    @property
    def literals_hit(self) -> int:
        return sum(1 for lit in self.gold.literals if literal_recalled(lit, self.values))

    def record(self) -> dict[str, Any]:
        return {
            "db_id": self.db_id,
            "kept_tables": sorted(self.kept),
            "kept_columns": sorted(f"{t}.{c}" for t, cs in self.kept.items() for c in cs),
            "kept_values": [
                {"table": v.table, "column": v.column, "value": v.value, "score": v.score}
                for v in self.values
            ],
            "gold_tables": sorted(self.gold.tables),
            "gold_columns": sorted(f"{t}.{c}" for t, c in self.gold.columns),
            "gold_literals": [
                {"table": t, "column": c, "value": v, "like": like}
                for t, c, v, like in self.gold.literals
            ],
            "strict": self.strict,
            "gold_error": self.gold.error,
        }


def kept_of(schema: SchemaInfo) -> dict[str, set[str]]:
    return {t.name: {c.name for c in t.columns} for t in schema.tables}


def summarise(items: list[ItemRecall]) -> dict[str, Any]:
    """Strict, column and value recall and the share of columns kept: overall and by database."""
    by_db: dict[str, list[ItemRecall]] = defaultdict(list)
    for item in items:
        by_db[item.db_id].append(item)
    return {
        "overall": _measures(items),
        "by_database": {db: _measures(group) for db, group in sorted(by_db.items())},
    }


def _measures(items: list[ItemRecall]) -> dict[str, Any]:
    gold_cols = sum(len(i.gold.columns) for i in items)
    literals = sum(len(i.gold.literals) for i in items)
    total = sum(i.total_columns for i in items)
    return {
        "items": len(items),
        "strict_recall": _share(sum(i.strict for i in items), len(items)),
        "column_recall": _share(sum(i.columns_hit for i in items), gold_cols),
        "value_recall": _share(sum(i.literals_hit for i in items), literals),
        "gold_literals": literals,
        "columns_kept_share": _share(sum(i.kept_columns for i in items), total),
        "mean_values": round(sum(len(i.values) for i in items) / len(items), 2) if items else 0,
    }


def _share(part: float, whole: float) -> float | None:
    return round(part / whole, 4) if whole else None
