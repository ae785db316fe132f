"""SParC dev scored as the official evaluator (test-suite-sql-eval) scores it.

The official code cannot be run here (no network), so agreement is checked two ways:

- the parse that exact match compares: on every SParC dev turn (and every Spider dev question)
  with a database, our parse over the database's schema equals the official parser's output,
  which both dev files ship (the ``sql`` key, with schema ids that tables.json names);
- mutated predictions: one turn per interaction is changed in a way whose effect the official
  rules decide (values and DISTINCT are not compared by exact match, SELECT is a multiset, ORDER
  BY must match; execution compares rows as a bag, in order when the gold has ORDER BY, columns
  in any order). The expected verdicts are worked out here with plain `sqlite3` and those rules,
  not with the scorer, and each turn's and interaction's verdict must match them.
"""

from __future__ import annotations

import json
import re
import sqlite3
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from conftest import DATA, SPIDER

from macsql.evals.datasets import Dataset, EvalItem, load_dataset
from macsql.evals.exact_match import Schema, parse_with_schema

SPARC = DATA / "sparc"
pytestmark = pytest.mark.needs_data("spider")


def _sparc() -> Dataset:
    if not (SPARC / "dev.json").is_file():
        pytest.skip(f"SParC dev is not in {SPARC}")
    return load_dataset("sparc", SPARC)


# ---------------------------------------------------------------------------------------------
# The official parse


def _by_names(official: Any, entry: dict[str, Any]) -> Any:
    """The official parse with tables.json's ids replaced by the evaluator's names."""
    tables = [t.lower() for t in entry["table_names_original"]]
    cols = [
        "__all__" if t < 0 else f"__{tables[t]}.{c.lower()}__"
        for t, c in entry["column_names_original"]
    ]

    def col(u: Any) -> Any:
        return None if u is None else (u[0], cols[u[1]], u[2])

    def val(v: Any) -> Any:
        if isinstance(v, dict):
            return query(v)
        return col(v) if isinstance(v, list) else v

    def unit(u: Any) -> Any:
        return None if u is None else (u[0], col(u[1]), col(u[2]))

    def cond(c: list[Any]) -> list[Any]:
        return [
            x if i % 2 else (x[0], x[1], unit(x[2]), val(x[3]), val(x[4])) for i, x in enumerate(c)
        ]

    def query(s: Any) -> Any:
        if s is None:
            return None
        return {
            "select": (s["select"][0], [(a, unit(u)) for a, u in s["select"][1]]),
            "from": {
                "table_units": [
                    (k, query(x) if k == "sql" else f"__{tables[x]}__")
                    for k, x in s["from"]["table_units"]
                ],
                "conds": cond(s["from"]["conds"]),
            },
            "where": cond(s["where"]),
            "groupBy": [col(u) for u in s["groupBy"]],
            "having": cond(s["having"]),
            "orderBy": (s["orderBy"][0], [unit(u) for u in s["orderBy"][1]])
            if s["orderBy"]
            else [],
            "limit": s["limit"],
            "intersect": query(s["intersect"]),
            "except": query(s["except"]),
            "union": query(s["union"]),
        }

    return query(official)


def _canonical(sql: Any) -> str:
    return json.dumps(sql, sort_keys=True, default=str)


def _official_pairs(name: str) -> list[tuple[str, str, Any]]:
    if name == "spider":
        records = json.loads((SPIDER / "dev.json").read_text())
        return [(r["db_id"], r["query"], r["sql"]) for r in records]
    records = json.loads((SPARC / "dev.json").read_text())
    return [(r["database_id"], t["query"], t["sql"]) for r in records for t in r["interaction"]]


@pytest.mark.parametrize("name", ["sparc", "spider"])
def test_our_schema_parse_is_the_official_parse_on_every_item(name: str) -> None:
    if name == "sparc":
        _sparc()
    tables = {e["db_id"]: e for e in json.loads((SPIDER / "tables.json").read_text())}
    schemas: dict[str, Schema] = {}
    checked = 0
    for db, sql, official in _official_pairs(name):
        path = SPIDER / "database" / db / f"{db}.sqlite"
        if not path.is_file():
            continue
        schema = schemas.setdefault(db, Schema.of_sqlite(path))
        ours = parse_with_schema(sql, schema)
        assert _canonical(ours) == _canonical(_by_names(official, tables[db])), (db, sql)
        checked += 1
    assert checked == {"sparc": 1144, "spider": 972}[name]


# ---------------------------------------------------------------------------------------------
# Mutated predictions

_SPACED = (("! =", "!="), ("> =", ">="), ("< =", "<="))


def _runnable(sql: str) -> str:
    for spaced, joined in _SPACED:
        sql = sql.replace(spaced, joined)
    return sql


def _rows(db: str, sql: str) -> list[tuple[Any, ...]] | None:
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        return conn.execute(_runnable(sql)).fetchall()
    except sqlite3.Error:
        return None
    finally:
        conn.close()


@dataclass
class Mutation:
    index: int
    kind: str
    sql: str


def _fk_columns(entry: dict[str, Any]) -> set[str]:
    tables = entry["table_names_original"]
    names = [
        (tables[t].lower(), c.lower()) if t >= 0 else ("", "*")
        for t, c in entry["column_names_original"]
    ]
    return {f"{names[i][0]}.{names[i][1]}" for pair in entry["foreign_keys"] for i in pair}


def _select_items(gold: str) -> list[str] | None:
    """The top-level select list of a one-SELECT query, split at its commas."""
    m = re.match(r"(?is)^SELECT\s+(?!DISTINCT\b)(.*?)\s+FROM\s", gold)
    if not m or re.search(r"(?i)\b(INTERSECT|UNION|EXCEPT)\b", gold):
        return None
    items = [i.strip() for i in m.group(1).split(",")]
    return items if all(i.count("(") == i.count(")") for i in items) else None


def mutate(item: EvalItem, dataset: Dataset, kinds: list[str]) -> Mutation | None:
    """A mutation of the turn's gold, of the first kind in `kinds` that applies."""
    gold = item.gold_sql.strip()
    single = gold.upper().count("SELECT") == 1
    plain = single and "distinct" not in gold.lower()
    for kind in kinds:
        sql = None
        if kind == "distinct" and plain and "limit" not in gold.lower():
            sql = "SELECT DISTINCT " + gold[len("SELECT ") :]
        elif kind == "literal" and plain and (m := re.search(r'"([^"]*)"', gold)):
            sql = gold[: m.start()] + f'"{m.group(1)}_x"' + gold[m.end() :]
        elif kind == "drop_order" and plain:
            m = re.search(r"(?i)\s+ORDER\s+BY\s+[^()]*?(?=\s+LIMIT\b|\s*;?\s*$)", gold)
            sql = gold[: m.start()] + gold[m.end() :] if m else None
        elif kind == "swap" and (items := _select_items(gold)) and len(items) >= 2:
            head = re.match(r"(?is)^SELECT\s+.*?\s+FROM\s", gold)
            assert head is not None
            swapped = [items[1], items[0], *items[2:]]
            sql = f"SELECT {' , '.join(swapped)} FROM " + gold[head.end() :]
        elif kind == "column" and plain:
            m = re.match(r"(?i)^SELECT\s+(\w+)\s+FROM\s+(\w+)(\s|$)", gold)
            entry = dataset.tables.get(item.db_id)
            if m and entry and " join " not in gold.lower():
                table, column = m.group(2).lower(), m.group(1).lower()
                keyed = _fk_columns(entry)
                tables = [t.lower() for t in entry["table_names_original"]]
                others = [
                    c
                    for t, c in entry["column_names_original"]
                    if t >= 0
                    and tables[t] == table
                    and c.lower() != column
                    and f"{table}.{c.lower()}" not in keyed
                ]
                if others and f"{table}.{column}" not in keyed:
                    sql = f"SELECT {others[0]} FROM " + gold[m.end(1) + len(" FROM ") :].lstrip()
        elif kind == "dangling_where":
            sql = gold + " WHERE"
        elif kind == "unknown_column" and (m := re.match(r"(?i)^SELECT\s+(DISTINCT\s+)?", gold)):
            sql = gold[: m.end()] + "no_such_column , " + gold[m.end() :]
        if sql is not None:
            return Mutation(item.index, kind, sql)
    return None


KINDS = ["swap", "distinct", "drop_order", "column", "literal", "dangling_where", "unknown_column"]
EXACT = {
    "swap": True,
    "distinct": True,
    "literal": True,
    "drop_order": False,
    "column": False,
    "dangling_where": True,
    "unknown_column": False,
}
"""Exact match, by the official rules: values, DISTINCT and the select list's order are not
compared; ORDER BY and the columns are. A WHERE with nothing after it parses as no condition
(the official condition parser stops at the end of the query), so a query that SQLite refuses
can still match exactly; a column the schema does not have makes the query unreadable: the
official evaluator then scores the empty query."""


def expected_ex(item: EvalItem, m: Mutation) -> bool:
    if m.kind in ("swap", "distinct"):
        return True  # columns may be permuted; DISTINCT is removed from both
    if m.kind == "dangling_where":
        # SQLite refuses it, unless the gold ended its statement first: the official evaluator
        # runs only the first statement of a prediction.
        return item.gold_sql.rstrip().endswith(";")
    if m.kind == "unknown_column":
        return False
    gold, pred = _rows(item.db or "", item.gold_sql), _rows(item.db or "", m.sql)
    if pred is None or gold is None:
        return False
    if "order by" in item.gold_sql.lower():
        return pred == gold
    return Counter(pred) == Counter(gold)


RARE_FIRST = ["drop_order", "swap", "literal", "column"]
"""The second round's kinds: those fewer turns allow, tried first wherever they apply."""


def _choose(ds: Dataset, usable: list[Any], round_: int) -> dict[int, Mutation]:
    """One mutated turn per interaction. Round 0: the kind the interaction's place in a
    rotation names when one of its turns allows it, else the next kind, so that every kind
    gets about as many interactions; round 1: the rare kinds only."""
    chosen: dict[int, Mutation] = {}
    for n, interaction in enumerate(usable):
        kinds = KINDS[n % len(KINDS) :] + KINDS[: n % len(KINDS)] if round_ == 0 else RARE_FIRST
        found = (
            m for kind in kinds for item in interaction.turns if (m := mutate(item, ds, [kind]))
        )
        if (m := next(found, None)) is not None:
            chosen[m.index] = m
    return chosen


def _score_file(ds: Dataset, mutations: dict[int, Mutation], path: Path, capsys: Any) -> Any:
    from macsql.cli.evals import main

    lines = []
    for interaction in ds.interactions:
        lines += [
            mutations[t.index].sql if t.index in mutations else t.gold_sql
            for t in interaction.turns
        ]
        lines.append("")
    path.write_text("\n".join(lines) + "\n")
    args = ["score", "--dataset", "sparc", "--data-dir", str(SPARC), "--predictions", str(path)]
    assert main([*args, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


@pytest.mark.slow
def test_mutated_predictions_get_the_official_verdicts_turn_and_interaction(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ds = _sparc()
    usable = [
        i
        for i in ds.interactions
        if not i.skip_reason and all(_rows(t.db or "", t.gold_sql) is not None for t in i.turns)
    ]  # the others have no database, or a gold that fails (a dataset error)
    kinds: Counter[tuple[str, bool]] = Counter()
    for round_ in (0, 1):
        mutations = _choose(ds, usable, round_)
        payload = _score_file(ds, mutations, tmp_path / f"pred{round_}.txt", capsys)
        got = {row["index"]: row for row in payload["items"]}
        right = 0
        for interaction in usable:
            ex_all = em_all = True
            for item in interaction.turns:
                m = mutations.get(item.index)
                ex = expected_ex(item, m) if m else True
                em = EXACT[m.kind] if m else True
                assert got[item.index]["correct"] is ex, (m, item.gold_sql, got[item.index])
                assert got[item.index]["exact"] is em, (m, item.gold_sql, got[item.index])
                if m:
                    kinds[(m.kind, ex)] += 1
                ex_all, em_all = ex_all and ex, em_all and em
            interaction_ex = all(got[t.index]["correct"] for t in interaction.turns)
            interaction_em = all(got[t.index]["exact"] for t in interaction.turns)
            assert (interaction_ex, interaction_em) == (ex_all, em_all), interaction.index
            right += ex_all
        conv = payload["summary"]["conversations"]
        assert conv["n_interactions_scored"] == len(usable) == 403
        assert conv["n_interaction_ex"] == right

    # The set is informative: every kind is there, and the rules that can fail do fail.
    assert all(kinds[(k, True)] + kinds[(k, False)] >= 20 for k in KINDS), kinds
    assert kinds[("column", False)] >= 10 and kinds[("literal", False)] >= 10, kinds
    assert kinds[("literal", True)] >= 3 and kinds[("drop_order", False)] >= 10, kinds
    assert kinds[("dangling_where", True)] >= 3, kinds
