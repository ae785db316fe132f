"""The batch runner: the Spider gold run, outputs, per-item failures, concurrency."""

from __future__ import annotations

import asyncio
import json
import os
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from chart_support import read_chart
from conftest import SPIDER, spider_eval_args

from macsql.evals.options import EvalOptions
from macsql.evals.predictions import NO_PREDICTION, read_spider_predictions
from macsql.evals.results import RunDirectoryError
from macsql.evals.runner import run_eval, run_eval_sync
from macsql.evals.scheduler import items_in_flight
from macsql.evals.scoring import score_predictions

needs_spider = pytest.mark.needs_data("spider")


def _options(tmp_path: Path, **kw: Any) -> EvalOptions:
    values: dict[str, Any] = {
        "dataset": "spider",
        "data_dir": str(SPIDER),
        "out": str(tmp_path / "run"),
        "progress": False,
    }
    values.update(kw)
    return EvalOptions(**values)


@pytest.mark.slow
@needs_spider
def test_spider_gold_run_scores_100_on_972_and_skips_62(tmp_path: Path) -> None:
    started = time.perf_counter()
    result = run_eval_sync(_options(tmp_path, gold=True))
    elapsed = time.perf_counter() - started
    s = result.summary
    assert s["ex"] == 100.0
    assert (s["n_scored"], s["n_correct"], s["n_skipped"]) == (972, 972, 62)
    assert s["skip_reasons"] == {"database missing: wta_1": 62}
    assert (s["n_errors"], s["n_timeouts"], s["n_gold_errors"], s["n_failed"]) == (0, 0, 0, 0)
    assert {k: v["count"] for k, v in s["by_difficulty"].items()} == {
        "easy": 232,
        "medium": 416,
        "hard": 160,
        "extra": 164,
        "all": 972,
    }
    assert elapsed < 60, f"the gold run took {elapsed:.1f}s"
    print(
        f"\nSpider gold run: EX {s['ex']}, scored {s['n_scored']}, skipped {s['n_skipped']}, "
        f"wall {s['wall_time_s']:.2f}s"
    )

    out = result.out_dir
    lines = (out / "results.jsonl").read_text().splitlines()
    assert len(lines) == 1034
    records = [json.loads(line) for line in lines]
    assert sorted(r["index"] for r in records) == list(range(1034))
    first = next(r for r in records if r["index"] == 0)
    assert first["prediction"] == "SELECT count(*) FROM singer" and first["correct"] is True
    assert first["level"] == "easy" and first["db_id"] == "concert_singer"

    preds = read_spider_predictions(out / "pred.sql")
    assert len(preds) == 1034
    dev = json.loads((SPIDER / "dev.json").read_text())
    assert preds[0] == dev[0]["query"]
    assert all(p == NO_PREDICTION for p, d in zip(preds, dev, strict=True) if d["db_id"] == "wta_1")
    # The written pred.sql scores the same with the score command's code path.
    from macsql.evals.datasets import load_spider

    rescored = score_predictions(load_spider(SPIDER), preds)
    assert rescored.summary["ex"] == 100.0 and rescored.summary["n_skipped"] == 62

    saved = json.loads((out / "summary.json").read_text())
    for key in (
        "ex",
        "n_scored",
        "n_skipped",
        "by_difficulty",
        "n_errors",
        "n_timeouts",
        "mean_attempts",
        "selector_rate",
        "tokens_per_agent",
        "wall_time_s",
    ):
        assert key in saved
    md = (out / "summary.md").read_text()
    assert "| easy | 232 | 232 | 100.00 |" in md and "62: database missing: wta_1" in md
    ex, attempts = read_chart(out / "summary.svg")
    assert ex.categories == ["easy", "medium", "hard", "extra", "all"]
    assert ex.value_labels == ["100.0"] * 5
    assert attempts.value_labels == [str(v) for v in saved["attempts_histogram"].values()]


class ScriptedGraph:
    """Per-question behaviour: a reply dict, an exception to raise, or a delay to hang."""

    def __init__(self, behaviours: dict[str, Any], default: dict[str, Any]) -> None:
        self.behaviours = behaviours
        self.default = default
        self.calls: list[dict[str, Any]] = []

    async def ainvoke(self, payload: dict[str, Any], context: Any = None) -> Any:
        self.calls.append({"payload": payload, "context": context})
        action = self.behaviours.get(payload["question"], self.default)
        if isinstance(action, BaseException):
            raise action
        if isinstance(action, float):
            await asyncio.sleep(action)
        return action


@needs_spider
def test_model_errors_stay_on_their_item_and_the_run_goes_on(tmp_path: Path) -> None:
    dev = json.loads((SPIDER / "dev.json").read_text())[:8]
    usage = {
        "decomposer": {"calls": 2, "input_tokens": 300, "output_tokens": 40, "latency_s": 1.5},
        "refiner": {"calls": 1, "input_tokens": 100, "output_tokens": 10, "latency_s": 0.5},
    }
    good = {
        "sql": "SELECT count(*) FROM singer",
        "status": "ok",
        "attempts": 2,
        "selector_used": True,
        "usage": usage,
    }
    graph = ScriptedGraph(
        {
            dev[1]["question"]: RuntimeError("HTTP 500 from model server"),
            dev[2]["question"]: "garbage, not a dict",
            dev[3]["question"]: 5.0,  # hangs past the item timeout
            dev[4]["question"]: {
                "sql": "",
                "status": "failed",
                "error": "no SQL in reply",
                "attempts": 0,
                "usage": usage,
            },
            dev[5]["question"]: {
                "sql": "SELEC broken",
                "status": "failed",
                "error": "syntax error",
                "attempts": 3,
                "usage": usage,
            },
        },
        default=good,
    )
    options = _options(
        tmp_path,
        limit=8,
        item_timeout=0.5,
        concurrency=4,
        model="openai:x",
        base_url="http://127.0.0.1:9/v1",
        max_tries=5,
    )
    result = asyncio.run(run_eval(options, graph=graph))
    records = result.records
    assert sorted(records) == list(range(8))
    assert records[1]["status"] == "failed" and "HTTP 500" in records[1]["error"]
    assert records[2]["status"] == "failed" and "not a dict" in records[2]["error"]
    assert records[3]["status"] == "failed" and "timed out" in records[3]["error"]
    assert records[4]["reason"] == "no_prediction" and records[4]["error"] == "no SQL in reply"
    assert records[5]["reason"] == "pred_error" and records[5]["correct"] is False
    assert records[0]["correct"] is True and records[1]["correct"] is False
    s = result.summary
    assert s["n_failed"] == 5 and s["n_scored"] == 8
    assert s["n_correct"] == sum(1 for r in records.values() if r["correct"])
    assert s["n_no_prediction"] == 4 and s["n_errors"] == 1
    # Usage: the 3 good items and items 4 and 5 reported it.
    assert s["tokens_per_agent"]["decomposer"]["calls"] == 5 * 2
    assert s["tokens_per_agent"]["refiner"]["input_tokens"] == 5 * 100
    assert s["selector_rate"] == pytest.approx(3 / 8)
    assert s["mean_attempts"] == pytest.approx((3 * 2 + 0 + 3) / 8)
    assert s["attempts_histogram"] == {"0": 4, "2": 3, "3": 1}
    # The context carries the run's model settings and the dataset style.
    ctx = graph.calls[0]["context"]
    assert (ctx.model, ctx.base_url, ctx.max_try_times, ctx.dataset_style) == (
        "openai:x",
        "http://127.0.0.1:9/v1",
        5,
        "spider",
    )
    assert graph.calls[0]["payload"]["db"].endswith("concert_singer.sqlite")


@needs_spider
def test_concurrency_is_not_capped_by_the_default_executor(tmp_path: Path) -> None:
    """Sync graph nodes run in the loop's default executor; the runner sizes it.

    Counts the sync calls running at once rather than timing them, so a loaded machine
    cannot fail it: the stock executor has min(32, cores + 4) threads.
    """
    lock = threading.Lock()
    running = {"now": 0, "peak": 0}

    def sync_node() -> None:
        with lock:
            running["now"] += 1
            running["peak"] = max(running["peak"], running["now"])
        time.sleep(0.3)
        with lock:
            running["now"] -= 1

    class SyncNodeGraph:
        async def ainvoke(self, payload: dict[str, Any], context: Any = None) -> dict[str, Any]:
            await asyncio.get_running_loop().run_in_executor(None, sync_node)
            return {"sql": "SELECT 1", "status": "ok", "attempts": 1}

    options = _options(tmp_path, limit=24, concurrency=24)
    asyncio.run(run_eval(options, graph=SyncNodeGraph()))
    stock_executor = min(32, (os.cpu_count() or 1) + 4)
    assert running["peak"] > stock_executor, running


@needs_spider
def test_more_items_than_request_slots_are_in_progress(tmp_path: Path) -> None:
    """`concurrency` caps model requests; items past it do their local work meanwhile."""

    class CountingGraph:
        now = peak = 0

        async def ainvoke(self, payload: dict[str, Any], context: Any = None) -> dict[str, Any]:
            self.now += 1
            self.peak = max(self.peak, self.now)
            await asyncio.sleep(0.05)
            self.now -= 1
            return {"sql": "SELECT 1", "status": "ok", "attempts": 1}

    graph = CountingGraph()
    asyncio.run(run_eval(_options(tmp_path, limit=16, concurrency=4), graph=graph))
    assert graph.peak == items_in_flight(4) == 6


@needs_spider
def test_an_existing_run_is_not_overwritten_silently(tmp_path: Path) -> None:
    run_eval_sync(_options(tmp_path, gold=True, limit=5))
    with pytest.raises(RunDirectoryError, match="--resume"):
        run_eval_sync(_options(tmp_path, gold=True, limit=5))
    with pytest.raises(RunDirectoryError, match="differs"):
        run_eval_sync(_options(tmp_path, gold=False, limit=5, resume=True))
    again = run_eval_sync(_options(tmp_path, gold=True, limit=3, overwrite=True))
    lines = (again.out_dir / "results.jsonl").read_text().splitlines()
    assert len(lines) == 3


@needs_spider
def test_cli_eval_gold_subset(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    from macsql.cli.evals import main

    out = tmp_path / "cli"
    assert main(spider_eval_args(out, "--gold", "--limit", "30")) == 0
    text = capsys.readouterr().out
    assert "execution (EX)" in text and "100.00" in text
    assert len((out / "pred.sql").read_text().splitlines()) == 30
    assert main(spider_eval_args(tmp_path / "x", "--gold", data_dir=tmp_path / "nowhere")) == 2
