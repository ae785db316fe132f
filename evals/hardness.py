"""Spider hardness classes (easy / medium / hard / extra), by the official rules.

The official Spider evaluator parses the gold SQL into a fixed structure and counts three things:

- component 1: WHERE, GROUP BY, ORDER BY, LIMIT, each join, each OR, each LIKE;
- component 2: nested queries in conditions, plus INTERSECT / UNION / EXCEPT;
- others: more than one "aggregation", more than one SELECT item, more than one WHERE
  condition, more than one GROUP BY column.

The thresholds on these counts give the class. The counts keep the official scorer's quirks,
because the published per-class numbers depend on them:

- a negated condition (``NOT IN``, ``NOT LIKE``) counts as an aggregation in WHERE and HAVING,
  and every AND/OR between HAVING conditions counts as one too;
- "more than one WHERE condition" compares the length of the condition list, conjunctions
  included;
- only conditions of the top-level query are counted (not those inside a sub-query), and a
  sub-query in FROM is not a nested query;
- a column-valued right-hand side (``a = T2.b``) swallows everything up to the next comma,
  parenthesis, AND or clause keyword, so an OR after it is not seen.

The rules count on the ``sql`` structure that Spider's JSON ships with every item
(`item_hardness`). An item without it (a stripped copy, a hand-made file) is parsed from its SQL
by `macsql.evals.spider_sql_parse`, which builds the same structure.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from macsql.evals.spider_sql_parse import LIKE_OP, HardnessParseError, parse_sql

HARDNESS_LEVELS = ("easy", "medium", "hard", "extra")


# ---------------------------------------------------------------------------------------------
# Counting rules. They accept the parser's tuples and the JSON lists of Spider's `sql` field.


def _first_is_set(unit: Any) -> bool:
    """The official "has aggregation" test: the first field of a unit is non-zero.

    For a column unit that field is the aggregation; for a condition unit it is the NOT flag;
    and an "and"/"or" string between conditions always passes.
    """
    if isinstance(unit, str):
        return True
    return unit[0] not in (0, False)


def _conjunctions(conditions: Sequence[Any]) -> list[str]:
    return [c for c in conditions[1::2] if isinstance(c, str)]


def _condition_units(sql: dict[str, Any]) -> list[Sequence[Any]]:
    return list(sql["from"]["conds"][::2]) + list(sql["where"][::2]) + list(sql["having"][::2])


def nested_queries(sql: dict[str, Any]) -> list[dict[str, Any]]:
    """Sub-queries that are condition values, then the INTERSECT/EXCEPT/UNION operands."""
    nested = [
        value
        for unit in _condition_units(sql)
        for value in (unit[3], unit[4])
        if isinstance(value, dict)
    ]
    nested.extend(sql[op] for op in ("intersect", "except", "union") if sql[op] is not None)
    return nested


def count_component1(sql: dict[str, Any]) -> int:
    count = sum(1 for present in (sql["where"], sql["groupBy"], sql["orderBy"]) if len(present) > 0)
    count += sql["limit"] is not None
    count += max(len(sql["from"]["table_units"]) - 1, 0)
    conjunctions = (
        _conjunctions(sql["from"]["conds"])
        + _conjunctions(sql["where"])
        + _conjunctions(sql["having"])
    )
    count += conjunctions.count("or")
    count += sum(1 for unit in _condition_units(sql) if unit[1] == LIKE_OP)
    return count


def count_component2(sql: dict[str, Any]) -> int:
    return len(nested_queries(sql))


def count_others(sql: dict[str, Any]) -> int:
    select_items = sql["select"][1]
    aggregations = sum(1 for item in select_items if _first_is_set(item))
    aggregations += sum(1 for unit in sql["where"][::2] if _first_is_set(unit))
    aggregations += sum(1 for unit in sql["groupBy"] if _first_is_set(unit))
    if len(sql["orderBy"]) > 0:
        order_units = sql["orderBy"][1]
        cols = [u[1] for u in order_units if u[1]] + [u[2] for u in order_units if u[2]]
        aggregations += sum(1 for unit in cols if _first_is_set(unit))
    aggregations += sum(1 for unit in sql["having"] if _first_is_set(unit))
    count = int(aggregations > 1)
    count += len(select_items) > 1
    count += len(sql["where"]) > 1
    count += len(sql["groupBy"]) > 1
    return count


def hardness_of_structure(sql: dict[str, Any]) -> str:
    """The hardness class of a parsed query (ours or the `sql` field of Spider's JSON)."""
    comp1 = count_component1(sql)
    comp2 = count_component2(sql)
    others = count_others(sql)
    if comp1 <= 1 and others == 0 and comp2 == 0:
        return "easy"
    if (others <= 2 and comp1 <= 1 and comp2 == 0) or (comp1 <= 2 and others < 2 and comp2 == 0):
        return "medium"
    if (
        (others > 2 and comp1 <= 2 and comp2 == 0)
        or (2 < comp1 <= 3 and others <= 2 and comp2 == 0)
        or (comp1 <= 1 and others == 0 and comp2 <= 1)
    ):
        return "hard"
    return "extra"


def spider_hardness(sql: str) -> str:
    """The Spider hardness class of a gold query's text; raises `HardnessParseError` if
    unparseable."""
    return hardness_of_structure(parse_sql(sql))


def item_hardness(item: Mapping[str, Any]) -> str:
    """The hardness class of a Spider question record: from the official parse (`sql`) when it
    has one, else from its SQL (`query`); "unknown" when neither can be read."""
    official = item.get("sql")
    if isinstance(official, dict):
        try:
            return hardness_of_structure(official)
        except (KeyError, IndexError, TypeError):
            pass  # a malformed parse: fall back to the SQL text
    try:
        return spider_hardness(str(item.get("query") or ""))
    except HardnessParseError:
        return "unknown"
