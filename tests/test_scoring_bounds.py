"""Scoring is bounded like execution (rows, bytes, time), and scores a prediction of several
statements as the official Spider evaluator does: its first statement only."""

from __future__ import annotations

import time
from pathlib import Path

from test_eval_scoring import tiny_spider  # noqa: F401  (the fixture)
from timing import generous

from macsql.evals.compare import FIRST_STATEMENT_NOTE, first_statement
from macsql.evals.datasets import load_spider
from macsql.evals.scoring import Reason, Scorer, score_predictions, summary_text

KILOBYTE_ROWS = (
    "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) "
    "SELECT x, printf('%.1000c', 'r') FROM c"
)


def test_first_statement_follows_the_official_split() -> None:
    assert first_statement("SELECT 1; SELECT 2;") == "SELECT 1;"
    assert first_statement("SELECT ';' AS s; SELECT 2") == "SELECT ';' AS s;"
    assert first_statement("SELECT 1;") == "SELECT 1;"
    assert first_statement("SELECT 1") == "SELECT 1"


def test_two_statement_prediction_is_scored_on_its_first(tiny_spider: Path) -> None:  # noqa: F811
    items = load_spider(tiny_spider).items
    two = "SELECT count(*) FROM items; UNION ALL SELECT 1;"
    score = Scorer("spider").score(items[2], two)
    assert score.correct is True
    assert score.detail == FIRST_STATEMENT_NOTE
    wrong_first = "SELECT 1; SELECT count(*) FROM items;"
    assert Scorer("spider").score(items[2], wrong_first).correct is False
    # the official scorer keeps the whole text when it keeps DISTINCT: one statement at a time
    kept = Scorer("spider", keep_distinct=True).score(items[2], two)
    assert kept.correct is False and kept.reason == Reason.PRED_ERROR


def test_the_summary_says_how_many_were_cut(tiny_spider: Path) -> None:  # noqa: F811
    dataset = load_spider(tiny_spider)
    report = score_predictions(dataset, {2: "SELECT count(*) FROM items; SELECT 2;"})
    assert report.summary["n_first_statement_only"] == 1
    assert "scored on its first, as the official Spider evaluator does" in summary_text(
        report.summary, dataset.levels
    )


def test_a_huge_predicted_result_is_too_large_not_out_of_memory(
    tiny_spider: Path,  # noqa: F811
) -> None:
    items = load_spider(tiny_spider).items
    scorer = Scorer("spider", timeout=30, max_bytes=20 * 1024 * 1024)
    started = time.monotonic()
    score = scorer.score(items[2], KILOBYTE_ROWS)
    assert time.monotonic() - started < 10
    assert score.correct is False and score.reason == Reason.TOO_LARGE
    assert "budget" in (score.detail or "")


def test_the_scoring_row_cap_holds(tiny_spider: Path) -> None:  # noqa: F811
    items = load_spider(tiny_spider).items
    endless = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT x FROM c"
    score = Scorer("spider", timeout=30, max_rows=5000).score(items[2], endless)
    assert score.reason == Reason.TOO_LARGE and "5,000 rows" in (score.detail or "")


def test_scoring_timeout_interrupts_slow_steps(tiny_spider: Path) -> None:  # noqa: F811
    items = load_spider(tiny_spider).items
    # (a width the data decides, 10000000+i, is refused before it runs: a constant one, and a
    # character that depends on the row, so that SQLite builds the string anew each row, about
    # 7 ms a step; a search in it, such as replace(), is refused as a search in a grown value)
    slow = (
        "WITH RECURSIVE r(i) AS (SELECT 1 UNION ALL SELECT i+1 FROM r WHERE i<4000) "
        "SELECT sum(length(printf('%.*c', 1000000, char(97 + i % 2)))) FROM r"
    )
    started = time.monotonic()
    score = Scorer("spider", timeout=1.0).score(items[2], slow)
    assert time.monotonic() - started < generous(1.5)  # the gold runs first, quickly
    assert score.reason == Reason.TIMEOUT
