"""Mutated gold queries get the verdicts the Spider test-suite rules require.

Each mutation type has its own expected verdict, worked out from what the mutation does to the
result and what the rules say, and checked here with plain `sqlite3` (not the scorer):

- a swapped pair of SELECT columns: always correct (columns may be permuted);
- an added DISTINCT (gold has no LIMIT): always correct by default (DISTINCT is removed from
  both queries); with ``keep_distinct`` correct exactly when the gold result has no duplicate
  rows;
- a dropped ORDER BY (gold has ORDER BY, no LIMIT): correct exactly when the rows still come in
  the gold's order; the same rows in another order are wrong (but right under BIRD's set rule);
- a changed column: correct exactly when the new column holds the same values (as a bag, or a
  sequence when the gold is ordered);
- a changed literal: correct exactly when the result does not change (e.g. both empty).
"""

from __future__ import annotations

import json
import sqlite3
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import pytest
import sqlglot
from conftest import SPIDER
from sqlglot import exp

from macsql.evals.compare import bird_equal
from macsql.evals.datasets import Dataset, load_spider
from macsql.evals.scoring import Reason, score_predictions

pytestmark = [pytest.mark.needs_data("spider"), pytest.mark.slow]  # mutates the whole dev set


@dataclass
class Mutation:
    index: int
    kind: str
    sql: str


def _rows(db: str, sql: str) -> list[tuple]:
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        return conn.execute(sql).fetchall()
    finally:
        conn.close()


def _top_select(sql: str) -> exp.Select | None:
    try:
        tree = sqlglot.parse_one(sql, read="sqlite")
    except sqlglot.errors.ParseError:
        return None
    return tree if isinstance(tree, exp.Select) else None


def _single_table(select: exp.Select) -> str | None:
    if select.args.get("joins") or select.find(exp.Subquery):
        return None
    source = select.args.get("from_") or select.args.get("from")
    table = source.this if source is not None else None
    return table.name if isinstance(table, exp.Table) else None


def _columns_of(tables: dict, db_id: str, table: str) -> list[str]:
    entry = tables[db_id]
    names = [t.lower() for t in entry["table_names_original"]]
    if table.lower() not in names:
        return []
    t = names.index(table.lower())
    return [c for ti, c in entry["column_names_original"] if ti == t]


def build_mutations(dataset: Dataset, per_kind: int = 80) -> list[Mutation]:
    """Up to `per_kind` mutations of each kind over the items that have a database."""
    out: dict[str, list[Mutation]] = {
        k: [] for k in ("swap", "distinct", "drop_order", "column", "literal")
    }

    def add(kind: str, index: int, sql: str) -> None:
        if len(out[kind]) < per_kind:
            out[kind].append(Mutation(index, kind, sql))

    for item in dataset.items:
        if item.skipped:
            continue
        gold = item.gold_sql
        select = _top_select(gold)
        if select is None or "distinct" in gold.lower():
            continue
        exprs = select.expressions
        if len(exprs) >= 2 and not any(isinstance(e, exp.Star) for e in exprs):
            swapped = select.copy()
            a, b = swapped.expressions[0].copy(), swapped.expressions[1].copy()
            swapped.expressions[0].replace(b)
            swapped.expressions[1].replace(a)
            add("swap", item.index, swapped.sql(dialect="sqlite"))
        if gold.upper().startswith("SELECT ") and not select.args.get("limit"):
            add("distinct", item.index, "SELECT DISTINCT " + gold[len("SELECT ") :])
        if select.args.get("order") and not select.args.get("limit"):
            dropped = select.copy()
            dropped.set("order", None)
            add("drop_order", item.index, dropped.sql(dialect="sqlite"))
        table = _single_table(select)
        first = exprs[0] if exprs else None
        if table and isinstance(first, exp.Column):
            others = [
                c
                for c in _columns_of(dataset.tables, item.db_id, table)
                if c.lower() != first.name.lower()
            ]
            if others:
                changed = select.copy()
                changed.expressions[0].replace(exp.column(others[0], quoted=True))
                add("column", item.index, changed.sql(dialect="sqlite"))
        where = select.args.get("where")
        literal = where.find(exp.Literal) if where else None
        if literal is not None:
            changed = select.copy()
            lit = changed.args["where"].find(exp.Literal)
            new = (
                exp.Literal.string(lit.this + "_x")
                if lit.is_string
                else exp.Literal.number(str(lit.this) + "7")
            )
            lit.replace(new)
            add("literal", item.index, changed.sql(dialect="sqlite"))
    return [m for kind in out.values() for m in kind]


@pytest.fixture(scope="module")
def spider() -> Dataset:
    return load_spider(SPIDER)


@pytest.fixture(scope="module")
def mutations(spider: Dataset) -> list[Mutation]:
    found = build_mutations(spider)
    kinds = Counter(m.kind for m in found)
    assert all(kinds[k] >= 40 for k in ("swap", "distinct", "drop_order", "column", "literal")), (
        kinds
    )
    return found


def _expected(m: Mutation, spider: Dataset, keep_distinct: bool) -> bool:
    item = spider.items[m.index]
    gold = _rows(item.db, item.gold_sql)
    ordered = "order by" in item.gold_sql.lower()
    if m.kind == "swap":
        return True
    if m.kind == "distinct":
        return (len(set(gold)) == len(gold)) if keep_distinct else True
    pred = _rows(item.db, m.sql)
    if m.kind == "drop_order":
        return pred == gold
    if m.kind in ("column", "literal"):
        if not gold and not pred:
            return True
        return pred == gold if ordered else Counter(pred) == Counter(gold)
    raise AssertionError(m.kind)


@pytest.mark.parametrize("keep_distinct", [False, True])
def test_mutated_gold_gets_the_verdicts_the_rules_require(
    spider: Dataset, mutations: list[Mutation], keep_distinct: bool
) -> None:
    by_kind: dict[str, Counter] = {}
    for kind in {m.kind for m in mutations}:
        subset = [m for m in mutations if m.kind == kind]
        report = score_predictions(
            spider, {m.index: m.sql for m in subset}, keep_distinct=keep_distinct
        )
        verdicts = {s.index: s for s in report.scores}
        for m in subset:
            expected = _expected(m, spider, keep_distinct)
            got = verdicts[m.index]
            assert got.correct is expected, (
                kind,
                m.index,
                m.sql,
                spider.items[m.index].gold_sql,
                got,
            )
            if not expected:
                assert got.reason == Reason.MISMATCH
            by_kind.setdefault(kind, Counter())[expected] += 1
    # The set is informative: each rule that can fail does fail on some items.
    assert by_kind["swap"][False] == 0
    assert by_kind["drop_order"][False] >= 3
    assert by_kind["column"][False] >= 10
    assert by_kind["literal"][False] >= 10
    if keep_distinct:
        assert by_kind["distinct"][False] >= 3
    else:
        assert by_kind["distinct"][False] == 0


def test_dropped_order_by_is_wrong_only_because_order_matters(
    spider: Dataset, mutations: list[Mutation]
) -> None:
    """The rows are the same bag: BIRD's set rule would accept what Spider's rejects."""
    dropped = [m for m in mutations if m.kind == "drop_order"]
    report = score_predictions(spider, {m.index: m.sql for m in dropped})
    wrong = [s for s in report.scores if s.correct is False]
    assert wrong
    for score in wrong:
        item = spider.items[score.index]
        pred = _rows(item.db, next(m.sql for m in dropped if m.index == score.index))
        gold = _rows(item.db, item.gold_sql)
        assert Counter(pred) == Counter(gold)
        assert bird_equal(pred, gold)


def test_mutated_predictions_file_round_trip_through_score_json(
    spider: Dataset, mutations: list[Mutation], tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    """``score --json`` on a pred.sql holding gold everywhere but a few mutated lines."""
    from macsql.cli.evals import main

    chosen = {m.index: m for m in mutations if m.kind in ("column", "swap")}
    lines = [chosen[i].sql if i in chosen else it.gold_sql for i, it in enumerate(spider.items)]
    pred = tmp_path / "pred.sql"
    pred.write_text("\n".join(lines) + "\n")
    assert (
        main(
            [
                "score",
                "--dataset",
                "spider",
                "--data-dir",
                str(SPIDER),
                "--predictions",
                str(pred),
                "--json",
            ]
        )
        == 0
    )
    payload = json.loads(capsys.readouterr().out)
    items = {row["index"]: row for row in payload["items"]}
    assert len(items) == len(spider.items)
    assert set(payload["items"][0]) >= {"index", "db_id", "correct", "hardness", "reason"}
    for index, m in chosen.items():
        assert items[index]["correct"] is _expected(m, spider, False)
    wrong = sum(1 for r in items.values() if r["correct"] is False)
    summary = payload["summary"]
    assert summary["n_scored"] == 972 and summary["n_skipped"] == 62
    assert summary["n_correct"] == 972 - wrong
    assert summary["ex"] == round(100 * (972 - wrong) / 972, 2)
    assert all(r["reason"] == "skipped" for r in items.values() if r["db_id"] == "wta_1")
