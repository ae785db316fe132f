"""BIRD: schema-only databases, predict_dev.json, per-difficulty EX, VES and R-VES."""

from __future__ import annotations

import asyncio
import json
import math
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from conftest import BIRD

from macsql.evals.bird_schema import build_schema_only_layout, build_schema_only_sqlite
from macsql.evals.datasets import load_bird
from macsql.evals.options import EvalOptions
from macsql.evals.predictions import (
    BIRD_SEPARATOR,
    NO_PREDICTION,
    read_bird_predictions,
    read_spider_predictions,
    write_bird_predictions,
    write_spider_predictions,
)
from macsql.evals.runner import run_eval, run_eval_sync
from macsql.evals.scoring import score_predictions
from macsql.evals.ves import drop_outliers, r_ves, reward, time_ratio, ves

needs_bird = pytest.mark.needs_data("bird")


# --- schema-only databases -------------------------------------------------------------------


@pytest.mark.slow
@needs_bird
def test_schema_only_database_has_every_table_column_and_key(tmp_path: Path) -> None:
    entries = json.loads((BIRD / "dev_tables.json").read_text())
    for entry in entries:
        path = build_schema_only_sqlite(entry, tmp_path / f"{entry['db_id']}.sqlite")
        conn = sqlite3.connect(path)
        try:
            tables = [
                r[0]
                for r in conn.execute(
                    "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY rowid"
                )
            ]
            assert tables == entry["table_names_original"]
            for t_index, table in enumerate(tables):
                info = conn.execute(f'PRAGMA table_info("{table}")').fetchall()
                expected = [c for ti, c in entry["column_names_original"] if ti == t_index]
                assert [r[1] for r in info] == expected
                pk_cols = {r[1] for r in info if r[5] > 0}
                for key in entry["primary_keys"]:
                    ids = key if isinstance(key, list) else [key]
                    if entry["column_names_original"][ids[0]][0] == t_index:
                        assert pk_cols == {entry["column_names_original"][i][1] for i in ids}
            n_fk = sum(
                len(conn.execute(f'PRAGMA foreign_key_list("{t}")').fetchall()) for t in tables
            )
            assert n_fk == len(entry["foreign_keys"])
            assert conn.execute(f'SELECT count(*) FROM "{tables[0]}"').fetchone() == (0,)
        finally:
            conn.close()


@pytest.mark.slow
@needs_bird
def test_every_bird_dev_gold_query_runs_on_the_schema_only_layout(tmp_path: Path) -> None:
    root = build_schema_only_layout(BIRD, tmp_path / "bird")
    assert (root / "dev_databases" / "financial" / "database_description").is_dir()
    result = run_eval_sync(
        EvalOptions(
            dataset="bird",
            data_dir=str(root),
            gold=True,
            out=str(tmp_path / "run"),
            progress=False,
            ves_iterations=0,
        )
    )
    s = result.summary
    assert (s["n_scored"], s["n_correct"], s["n_skipped"], s["n_gold_errors"]) == (1534, 1534, 0, 0)
    assert {k: v["count"] for k, v in s["by_difficulty"].items()} == {
        "simple": 925,
        "moderate": 464,
        "challenging": 145,
        "all": 1534,
    }
    preds = json.loads((result.out_dir / "predict_dev.json").read_text())
    assert list(preds) == [str(i) for i in range(1534)]
    dev = json.loads((BIRD / "dev.json").read_text())
    assert preds["0"] == dev[0]["SQL"] + BIRD_SEPARATOR + dev[0]["db_id"]
    assert "ves" not in s


# --- a tiny BIRD layout with rows ------------------------------------------------------------

TABLES_ENTRY = {
    "db_id": "shop",
    "table_names_original": ["items", "orders"],
    "table_names": ["items", "orders"],
    "column_names_original": [
        [-1, "*"],
        [0, "id"],
        [0, "name"],
        [0, "price"],
        [1, "order_id"],
        [1, "item_id"],
        [1, "qty"],
    ],
    "column_names": [
        [-1, "*"],
        [0, "id"],
        [0, "name"],
        [0, "price"],
        [1, "order id"],
        [1, "item id"],
        [1, "quantity"],
    ],
    "column_types": ["text", "integer", "text", "real", "integer", "integer", "integer"],
    "primary_keys": [1, 4],
    "foreign_keys": [[5, 1]],
}

QUESTIONS = [
    ("simple", "How many items?", "SELECT count(*) FROM items"),
    ("simple", "Name of item 2?", "SELECT name FROM items WHERE id = 2"),
    (
        "moderate",
        "Items ordered?",
        "SELECT DISTINCT T1.name FROM items AS T1 JOIN orders AS T2 ON T1.id = T2.item_id",
    ),
    ("moderate", "Total quantity?", "SELECT sum(qty) FROM orders"),
    (
        "challenging",
        "Priciest ordered item?",
        "SELECT T1.name FROM items AS T1 JOIN orders AS T2 ON T1.id = T2.item_id "
        "ORDER BY T1.price DESC LIMIT 1",
    ),
    ("challenging", "A question on a missing database", "SELECT 1"),
]

PREDICTIONS = {
    "How many items?": "SELECT count(id) FROM items",  # right
    "Name of item 2?": "SELECT name, id FROM items WHERE id = 2",  # wrong: extra column
    "Items ordered?": "SELECT T1.name FROM items T1, orders T2\nWHERE T1.id = T2.item_id",  # right
    "Total quantity?": "SELECT sum(qty) FROM orders WHERE qty > 1",  # wrong value
    "Priciest ordered item?": "SELECT name FROM items WHERE id = 3",  # right
}


@pytest.fixture
def tiny_bird(tmp_path: Path) -> Path:
    root = tmp_path / "bird"
    db = build_schema_only_sqlite(TABLES_ENTRY, root / "dev_databases" / "shop" / "shop.sqlite")
    conn = sqlite3.connect(db)
    with conn:
        conn.executemany(
            "INSERT INTO items VALUES (?, ?, ?)",
            [(1, "pen", 2.5), (2, "ink", 7.0), (3, "lamp", 30.0), (4, "cup", 4.0)],
        )
        conn.executemany(
            "INSERT INTO orders VALUES (?, ?, ?)", [(1, 1, 3), (2, 3, 1), (3, 1, 1), (4, 4, 2)]
        )
    conn.close()
    (root / "dev_tables.json").write_text(json.dumps([TABLES_ENTRY]))
    records = [
        {
            "question_id": i,
            "db_id": "ghost" if "missing" in q else "shop",
            "question": q,
            "evidence": "",
            "SQL": sql,
            "difficulty": level,
        }
        for i, (level, q, sql) in enumerate(QUESTIONS)
    ]
    (root / "dev.json").write_text(json.dumps(records))
    (root / "mini_dev_sqlite.json").write_text(json.dumps(records[:3]))
    return root


class AnswerGraph:
    async def ainvoke(self, payload: dict[str, Any], context: Any = None) -> dict[str, Any]:
        sql = PREDICTIONS[payload["question"]]
        return {"sql": sql, "status": "ok", "attempts": 1, "selector_used": True, "usage": {}}


def test_bird_run_writes_predict_dev_json_and_per_difficulty_ex(
    tiny_bird: Path, tmp_path: Path
) -> None:
    options = EvalOptions(
        dataset="bird",
        data_dir=str(tiny_bird),
        out=str(tmp_path / "run"),
        progress=False,
        ves_iterations=5,
    )
    result = asyncio.run(run_eval(options, graph=AnswerGraph()))
    s = result.summary
    assert (s["n_scored"], s["n_correct"], s["n_skipped"]) == (5, 3, 1)
    assert s["skip_reasons"] == {"database missing: ghost": 1}
    assert s["by_difficulty"]["simple"] == {"count": 2, "correct": 1, "ex": 50.0}
    assert s["by_difficulty"]["moderate"] == {"count": 2, "correct": 1, "ex": 50.0}
    assert s["by_difficulty"]["challenging"] == {"count": 1, "correct": 1, "ex": 100.0}
    assert s["ex"] == 60.0
    assert s["selector_rate"] == 1.0

    raw = json.loads((result.out_dir / "predict_dev.json").read_text())
    assert list(raw) == ["0", "1", "2", "3", "4", "5"]
    assert raw["2"] == (
        "SELECT T1.name FROM items T1, orders T2 WHERE T1.id = T2.item_id" + BIRD_SEPARATOR + "shop"
    )
    assert raw["5"] == NO_PREDICTION + BIRD_SEPARATOR + "ghost"
    # Scoring the written file gives the same verdicts as the run.
    report = score_predictions(
        load_bird(tiny_bird),
        read_bird_predictions(result.out_dir / "predict_dev.json"),
        ves_iterations=0,
    )
    assert {x.index: x.correct for x in report.scores} == {
        i: r["correct"] for i, r in result.records.items()
    }

    # VES: wrong items count 0; right ones have a positive time ratio.
    assert s["ves_iterations"] == 5
    assert s["ves"] > 0 and 0 < s["r_ves"] <= 100 * math.sqrt(1.25) * 3 / 5
    assert s["ves_by_difficulty"]["challenging"]["ves"] > 0
    assert (result.out_dir / "summary.md").read_text().count("R-VES") >= 1


def test_score_cli_on_bird_json(
    tiny_bird: Path, tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    from macsql.cli.evals import main

    pred_file = write_bird_predictions(
        tmp_path / "predict_dev.json",
        {i: (PREDICTIONS.get(q, ""), "shop") for i, (_, q, _) in enumerate(QUESTIONS)},
    )
    assert (
        main(
            [
                "score",
                "--dataset",
                "bird",
                "--data-dir",
                str(tiny_bird),
                "--predictions",
                str(pred_file),
                "--json",
                "--ves-iterations",
                "0",
            ]
        )
        == 0
    )
    payload = json.loads(capsys.readouterr().out)
    verdicts = {row["index"]: (row["correct"], row["hardness"]) for row in payload["items"]}
    assert verdicts == {
        0: (True, "simple"),
        1: (False, "simple"),
        2: (True, "moderate"),
        3: (False, "moderate"),
        4: (True, "challenging"),
        5: (None, "challenging"),
    }
    assert payload["summary"]["ex"] == 60.0


def test_mini_dev_question_file_loads_by_split(tiny_bird: Path) -> None:
    ds = load_bird(tiny_bird, "mini_dev")
    assert ds.question_file.name == "mini_dev_sqlite.json"
    assert [i.index for i in ds.items] == [0, 1, 2]
    assert ds.items[2].level == "moderate"
    assert ds.items[0].db.endswith("dev_databases/shop/shop.sqlite")
    url = load_bird(tiny_bird, "mini_dev_sqlite", db_url="postgresql://u@h/{db_id}")
    assert url.items[0].db == "postgresql://u@h/shop"


# --- prediction files ------------------------------------------------------------------------


def test_prediction_files_round_trip_on_one_line(tmp_path: Path) -> None:
    sqls = ["SELECT a\nFROM t\r\n  WHERE b = 'x  y'", "", None, "SELECT\t1"]
    spider = write_spider_predictions(tmp_path / "pred.sql", sqls)
    assert spider.read_text().splitlines() == [
        "SELECT a FROM t WHERE b = 'x  y'",
        NO_PREDICTION,
        NO_PREDICTION,
        "SELECT 1",
    ]
    assert read_spider_predictions(spider)[0] == "SELECT a FROM t WHERE b = 'x  y'"

    bird = write_bird_predictions(
        tmp_path / "predict_dev.json", {1: ("SELECT 2\nFROM t", "db_b"), 0: ("SELECT 1", "db_a")}
    )
    raw = json.loads(bird.read_text())
    assert list(raw.items()) == [
        ("0", "SELECT 1\t----- bird -----\tdb_a"),
        ("1", "SELECT 2 FROM t\t----- bird -----\tdb_b"),
    ]
    assert read_bird_predictions(bird) == {0: "SELECT 1", 1: "SELECT 2 FROM t"}


def test_reading_lenient_bird_values(tmp_path: Path) -> None:
    path = tmp_path / "p.json"
    path.write_text(json.dumps({"0": "SELECT 1", "1": None, "2": "SELECT 3\t----- bird -----\tx"}))
    assert read_bird_predictions(path) == {0: "SELECT 1", 1: "", 2: "SELECT 3"}


# --- VES and R-VES math ----------------------------------------------------------------------


def test_outliers_beyond_three_sigma_are_dropped() -> None:
    values = [1.0] * 20 + [100.0]
    kept = drop_outliers(values)
    assert kept == [1.0] * 20
    assert drop_outliers([1.0, 2.0, 3.0]) == [1.0, 2.0, 3.0]
    # All equal (sigma 0): kept rather than dropped to nothing.
    assert drop_outliers([0.5, 0.5]) == [0.5, 0.5]


def test_time_ratio_is_the_mean_of_gold_over_pred_after_cleaning() -> None:
    gold = [0.2] * 20 + [50.0]
    pred = [0.1] * 21
    assert time_ratio(gold, pred) == pytest.approx(2.0)
    assert time_ratio([0.3, 0.1], [0.1, 0.1]) == pytest.approx(2.0)
    with pytest.raises(ValueError):
        time_ratio([], [])


@pytest.mark.parametrize(
    ("ratio", "expected"),
    [
        (0.0, 0.0),
        (0.1, 0.25),
        (0.25, 0.5),
        (0.49, 0.5),
        (0.5, 0.75),
        (0.99, 0.75),
        (1.0, 1.0),
        (1.99, 1.0),
        (2.0, 1.25),
        (40.0, 1.25),
    ],
)
def test_r_ves_reward_buckets(ratio: float, expected: float) -> None:
    assert reward(ratio) == expected


def test_ves_and_r_ves_over_items() -> None:
    ratios = [4.0, 1.0, 0.0, 0.25]  # the third item is not EX-correct
    assert ves(ratios) == pytest.approx((2 + 1 + 0 + 0.5) * 100 / 4)
    assert r_ves(ratios) == pytest.approx((math.sqrt(1.25) + 1 + 0 + math.sqrt(0.5)) * 100 / 4)
    assert ves([]) == 0.0 and r_ves([]) == 0.0


def test_a_prediction_keeps_its_sql_after_a_line_comment(tmp_path: Path) -> None:
    """On one line a `--` comment would swallow the rest of the query: it is dropped, while
    quoted text and block comments holding `--` stay as written."""
    sql = "SELECT a -- the name\nFROM t WHERE b = '--x' AND c = 'it''s -- ok'\n/* a -- b */ LIMIT 1"
    spider = write_spider_predictions(tmp_path / "pred.sql", [sql, 'SELECT "a--b"\n-- end'])
    assert spider.read_text().splitlines() == [
        "SELECT a FROM t WHERE b = '--x' AND c = 'it''s -- ok' /* a -- b */ LIMIT 1",
        'SELECT "a--b"',
    ]
