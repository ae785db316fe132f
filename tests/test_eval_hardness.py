"""Spider hardness classes agree with the official rules."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest
from conftest import SPIDER

from macsql.evals.datasets import load_spider
from macsql.evals.hardness import (
    count_component1,
    count_component2,
    count_others,
    hardness_of_structure,
    item_hardness,
    spider_hardness,
)
from macsql.evals.spider_sql_parse import HardnessParseError, parse_sql, tokenize

needs_spider = pytest.mark.needs_data("spider")


@pytest.mark.slow
@needs_spider
def test_spider_dev_distribution_is_the_published_one() -> None:
    dev = json.loads((SPIDER / "dev.json").read_text())
    assert len(dev) == 1034
    counts = Counter(spider_hardness(item["query"]) for item in dev)
    assert counts == {"easy": 248, "medium": 446, "hard": 174, "extra": 166}


@pytest.mark.slow
@needs_spider
def test_our_parse_counts_like_the_official_parse_on_every_item() -> None:
    """Spider's dev.json ships the official parser's structure (`sql`); the three counts from
    our parse equal the counts from it, item by item."""
    data = json.loads((SPIDER / "dev.json").read_text())
    compared = 0
    for item in data:
        if "sql" not in item:
            continue
        ours = parse_sql(item["query"])
        official = item["sql"]
        assert (count_component1(ours), count_component2(ours), count_others(ours)) == (
            count_component1(official),
            count_component2(official),
            count_others(official),
        ), item["query"]
        assert hardness_of_structure(ours) == hardness_of_structure(official)
        compared += 1
    assert compared >= 1000


def test_tokenizer_keeps_values_and_joins_comparisons() -> None:
    toks = tokenize("SELECT count(*) FROM t AS T1 WHERE T1.name = 'Ann Lee' AND age >= 3")
    assert toks == [
        "select",
        "count",
        "(",
        "*",
        ")",
        "from",
        "t",
        "as",
        "t1",
        "where",
        "t1.name",
        "=",
        '"Ann Lee"',
        "and",
        "age",
        ">=",
        "3",
    ]
    assert tokenize("a != 1") == ["a", "!=", "1"]
    assert tokenize("x IN (1,2)") == ["x", "in", "(", "1,2", ")"]


@pytest.mark.parametrize(
    ("sql", "expected"),
    [
        ("SELECT count(*) FROM singer", "easy"),
        ("SELECT name FROM singer WHERE age > 20", "easy"),
        ("SELECT name, age FROM singer WHERE age > 20", "medium"),
        ("SELECT T1.name FROM a AS T1 JOIN b AS T2 ON T1.id = T2.id WHERE T2.x = 1", "medium"),
        ("SELECT name FROM a WHERE x IN (SELECT x FROM b)", "hard"),
        ("SELECT name FROM a INTERSECT SELECT name FROM b", "hard"),
        ("SELECT name FROM a WHERE x = 1 OR y LIKE '%z%' ORDER BY name LIMIT 3", "extra"),
        # GROUP BY + ORDER BY (2), two aggregations and two columns (2): extra.
        ("SELECT a, count(*) FROM t GROUP BY a ORDER BY count(*) DESC", "extra"),
        # HAVING count(*) is not an aggregation to the official counter (it reads the NOT flag).
        ("SELECT a FROM t GROUP BY a HAVING count(*) > 1", "easy"),
    ],
)
def test_hand_made_classes(sql: str, expected: str) -> None:
    assert spider_hardness(sql) == expected


def test_official_quirks_are_kept() -> None:
    # A NOT IN condition counts as an aggregation (the official reads the NOT flag there).
    plain = parse_sql("SELECT name FROM t WHERE a IN (SELECT a FROM u)")
    negated = parse_sql("SELECT name FROM t WHERE a NOT IN (SELECT a FROM u)")
    assert count_others(negated) == count_others(plain)  # one "aggregation" is not > 1
    two = parse_sql("SELECT count(*) FROM t WHERE a NOT IN (SELECT a FROM u)")
    assert (
        count_others(two)
        == count_others(parse_sql("SELECT count(*) FROM t WHERE a IN (SELECT a FROM u)")) + 1
    )
    # A sub-query in FROM is not a nested query for component 2.
    assert count_component2(parse_sql("SELECT a FROM (SELECT a FROM t)")) == 0


def test_unparseable_sql_raises() -> None:
    with pytest.raises(HardnessParseError):
        spider_hardness("SELECT name FROM t WHERE name = 'unbalanced")
    with pytest.raises(HardnessParseError):
        spider_hardness("SELECT 1")


@needs_spider
def test_the_official_parse_decides_and_the_sql_text_is_the_fallback(tmp_path: Path) -> None:
    """An item's `sql` key (Spider's official parse) gives its class even when its text would
    give another; an item without one is classed from its text."""
    dev = json.loads((SPIDER / "dev.json").read_text())
    extra = next(item for item in dev if hardness_of_structure(item["sql"]) == "extra")
    easy_text = "SELECT count(*) FROM singer"
    records = [
        {"db_id": "concert_singer", "question": "a", "query": easy_text, "sql": extra["sql"]},
        {"db_id": "concert_singer", "question": "b", "query": easy_text},
        {"db_id": "concert_singer", "question": "c", "query": "SELECT 1"},
    ]
    assert [item_hardness(r) for r in records] == ["extra", "easy", "unknown"]
    (tmp_path / "dev.json").write_text(json.dumps(records))
    (tmp_path / "database").symlink_to(SPIDER / "database")
    assert [i.level for i in load_spider(tmp_path).items] == ["extra", "easy", "unknown"]


@needs_spider
def test_dev_classes_from_the_official_parse_are_the_published_ones() -> None:
    dev = json.loads((SPIDER / "dev.json").read_text())
    counts = Counter(item_hardness(item) for item in dev)
    assert counts == {"easy": 248, "medium": 446, "hard": 174, "extra": 166}
