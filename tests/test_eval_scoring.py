"""Scoring on small hand-made Spider and BIRD layouts: DISTINCT, timeouts, gold errors,
missing databases, test-suite database folders."""

from __future__ import annotations

import dataclasses
import json
import shutil
import sqlite3
import time
from pathlib import Path

import pytest

from macsql.evals.datasets import load_bird, load_spider
from macsql.evals.predictions import NO_PREDICTION
from macsql.evals.scoring import Reason, Scorer, score_predictions

ROWS = [
    (1, "pen", 2.5, "office"),
    (2, "ink", 7.0, "office"),
    (3, "cup", 4.0, "kitchen"),
    (4, "pan", 9.5, "kitchen"),
    (5, "mop", 6.0, "home"),
]

INFINITE = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c"


def make_shop_db(path: Path, rows: list[tuple] = ROWS) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(path)
    with conn:
        conn.execute("CREATE TABLE items (id INTEGER PRIMARY KEY, name TEXT, price REAL, cat TEXT)")
        conn.executemany("INSERT INTO items VALUES (?, ?, ?, ?)", rows)
    conn.close()
    return path


GOLD = [
    ("shop", "Names by price", "SELECT name FROM items ORDER BY price"),
    ("shop", "Which categories?", "SELECT DISTINCT cat FROM items"),
    ("shop", "How many items?", "SELECT count(*) FROM items"),
    ("shop", "Broken gold", "SELECT name FROM no_such_table"),
    ("ghost", "A question on a missing database", "SELECT 1"),
    ("shop", "Expensive items", "SELECT name FROM items WHERE price > 5"),
]


@pytest.fixture
def tiny_spider(tmp_path: Path) -> Path:
    root = tmp_path / "spider"
    make_shop_db(root / "database" / "shop" / "shop.sqlite")
    (root / "dev.json").write_text(
        json.dumps([{"db_id": db, "question": q, "query": sql} for db, q, sql in GOLD])
    )
    (root / "tables.json").write_text("[]")
    return root


def test_distinct_is_stripped_by_default_and_kept_on_request(tiny_spider: Path) -> None:
    ds = load_spider(tiny_spider)
    pred = "SELECT cat FROM items"  # duplicates, where the gold has DISTINCT
    assert Scorer("spider").score(ds.items[1], pred).correct is True
    kept = Scorer("spider", keep_distinct=True).score(ds.items[1], pred)
    assert kept.correct is False and kept.reason == Reason.MISMATCH
    # An added DISTINCT that removes duplicates is also forgiven by default only.
    assert (
        Scorer("spider")
        .score(ds.items[5], "SELECT DISTINCT name FROM items WHERE price > 5")
        .correct
        is True
    )


def test_order_by_in_gold_makes_row_order_matter(tiny_spider: Path) -> None:
    ds = load_spider(tiny_spider)
    scorer = Scorer("spider")
    assert scorer.score(ds.items[0], "SELECT name FROM items ORDER BY price ASC").correct
    wrong = scorer.score(ds.items[0], "SELECT name FROM items ORDER BY price DESC")
    assert wrong.correct is False and wrong.reason == Reason.MISMATCH
    # No ORDER BY in gold: any order of the same rows is right.
    assert scorer.score(
        ds.items[5], "SELECT name FROM items WHERE price > 5 ORDER BY name DESC"
    ).correct


def test_a_slow_prediction_is_interrupted_scored_zero_and_counted(tiny_spider: Path) -> None:
    ds = load_spider(tiny_spider)
    started = time.perf_counter()
    report = score_predictions(
        ds, {2: INFINITE, 5: "SELECT name FROM items WHERE price > 5"}, timeout=0.5
    )
    elapsed = time.perf_counter() - started
    assert elapsed < 5, "the timeout must really interrupt the query"
    by_index = {s.index: s for s in report.scores}
    assert by_index[2].correct is False and by_index[2].reason == Reason.TIMEOUT
    assert by_index[5].correct is True
    assert report.summary["n_timeouts"] == 1
    assert report.summary["ex"] == 50.0


def test_spider_gold_error_is_a_dataset_error_and_missing_database_a_skip(
    tiny_spider: Path,
) -> None:
    ds = load_spider(tiny_spider)
    assert ds.items[4].skip_reason == "database missing: ghost"
    report = score_predictions(ds, [g for _, _, g in GOLD])
    by_index = {s.index: s for s in report.scores}
    assert by_index[3].correct is None and by_index[3].reason == Reason.GOLD_ERROR
    assert "no_such_table" in (by_index[3].detail or "")
    assert by_index[4].correct is None and by_index[4].reason == Reason.SKIPPED
    s = report.summary
    assert (s["n_scored"], s["n_correct"], s["n_skipped"], s["n_gold_errors"]) == (4, 4, 2, 1)
    assert s["skip_reasons"] == {"database missing: ghost": 1, "gold_error": 1}


def test_errors_and_missing_predictions(tiny_spider: Path) -> None:
    ds = load_spider(tiny_spider)
    scorer = Scorer("spider")
    err = scorer.score(ds.items[2], "SELECT count(*) FROM nowhere")
    assert err.correct is False and err.reason == Reason.PRED_ERROR and "nowhere" in err.detail
    for empty in ("", "   ", NO_PREDICTION, None):
        assert scorer.score(ds.items[2], empty).reason == Reason.NO_PREDICTION
    # Writes never run: the read-only guard refuses them, and they score 0.
    assert scorer.score(ds.items[2], "DELETE FROM items").correct is False
    # The official scorer reads the placeholder " value " as 1.
    assert scorer.score(ds.items[2], "SELECT count(*) FROM items WHERE id >= value AND 1").correct


def test_every_database_of_a_test_suite_folder_must_agree(tiny_spider: Path) -> None:
    variant = [(i, n, p + 10 if n == "pen" else p, c) for i, n, p, c in ROWS]
    make_shop_db(tiny_spider / "database" / "shop" / "shop_variant1.sqlite", variant)
    ds = load_spider(tiny_spider)
    assert len(ds.items[5].db_files) == 2
    # Same rows as the gold on the original database, not on the variant.
    coincidence = "SELECT name FROM items WHERE name != 'pen' AND name != 'cup'"
    assert Scorer("spider").score(ds.items[5], coincidence).correct is False
    assert Scorer("spider").score(ds.items[5], "SELECT name FROM items WHERE 5 < price").correct


@pytest.fixture
def tiny_bird(tmp_path: Path) -> Path:
    root = tmp_path / "bird"
    make_shop_db(root / "dev_databases" / "shop" / "shop.sqlite")
    records = [
        {
            "question_id": 0,
            "db_id": "shop",
            "question": "q0",
            "evidence": "",
            "SQL": "SELECT name FROM items WHERE price > 5",
            "difficulty": "simple",
        },
        {
            "question_id": 1,
            "db_id": "shop",
            "question": "q1",
            "evidence": "",
            "SQL": "SELECT name FROM nothing",
            "difficulty": "moderate",
        },
        {
            "question_id": 2,
            "db_id": "gone",
            "question": "q2",
            "evidence": "",
            "SQL": "SELECT 1",
            "difficulty": "challenging",
        },
    ]
    (root / "dev.json").write_text(json.dumps(records))
    return root


def test_bird_gold_error_scores_zero_like_the_official(tiny_bird: Path) -> None:
    ds = load_bird(tiny_bird)
    report = score_predictions(
        ds,
        {
            0: "SELECT name FROM items WHERE price > 5 ORDER BY name",
            1: "SELECT name FROM items",
            2: "SELECT 1",
        },
    )
    by_index = {s.index: s for s in report.scores}
    assert by_index[0].correct is True
    assert by_index[1].correct is False and by_index[1].reason == Reason.GOLD_ERROR
    assert by_index[2].correct is None and by_index[2].detail == "database missing: gone"
    assert report.summary["by_difficulty"]["simple"] == {"count": 1, "correct": 1, "ex": 100.0}
    assert report.summary["by_difficulty"]["moderate"]["ex"] == 0.0


def test_bird_set_rule_versus_spider_bag_rule(tiny_bird: Path, tiny_spider: Path) -> None:
    dup = "SELECT name FROM items WHERE price > 5 UNION ALL SELECT 'ink'"
    assert Scorer("bird").score(load_bird(tiny_bird).items[0], dup).correct is True
    assert Scorer("spider").score(load_spider(tiny_spider).items[5], dup).correct is False


def test_gold_results_are_cached(tiny_spider: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ds = load_spider(tiny_spider)
    scorer = Scorer("spider")
    calls: list[str] = []
    original = scorer._run

    def counting(db: str, sql: str):  # type: ignore[no-untyped-def]
        calls.append(sql)
        return original(db, sql)

    monkeypatch.setattr(scorer, "_run", counting)
    for _ in range(3):
        assert scorer.score(ds.items[2], "SELECT count(*) FROM items").correct
    # The gold ran once; a prediction identical to it shares that result.
    assert calls == ["SELECT count(*) FROM items"]
    for _ in range(2):
        assert scorer.score(ds.items[2], "SELECT count(id) FROM items").correct
    assert calls == ["SELECT count(*) FROM items"] + ["SELECT count(id) FROM items"] * 2
    # A query whose result may change between runs is run again, even when it is the gold.
    volatile = "SELECT count(*) FROM items WHERE random() IS NOT NULL"
    scorer.score(dataclasses.replace(ds.items[2], gold_sql=volatile), volatile)
    assert calls[3:] == [volatile, volatile]


def test_a_database_that_vanishes_is_reported_not_raised(tiny_spider: Path) -> None:
    ds = load_spider(tiny_spider)
    shutil.rmtree(tiny_spider / "database" / "shop")
    result = Scorer("spider").score(ds.items[2], "SELECT 1")
    assert result.correct is None and result.reason == Reason.SKIPPED
    assert "not found" in (result.detail or "")
