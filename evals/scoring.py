"""Scoring predictions against the gold, as the official BIRD and Spider scorers do.

Every query runs through `execute_sql`: read-only, whole results, and a timeout that really
interrupts SQLite. A prediction that fails or times out scores 0 (a timeout is counted apart).
Results are bounded as in execution, with larger limits (`SCORING_MAX_ROWS`,
`SCORING_MAX_BYTES`): a prediction whose result exceeds them scores 0 as `too_large`, where the
official scorers would fetch it whole (a recursive CTE of 1 KB rows took 3 GB in 10 s).

- Spider: a gold query that fails is a dataset error; its item is reported as skipped.
- BIRD: a gold query that fails scores the item 0, as the official scorer does.

Gold results are cached per (database file, normalised gold SQL) within a `Scorer`.
"""

from __future__ import annotations

import re
import threading
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from macsql.database.connection import DatabaseNotFoundError, DatabaseRef, resolve_database
from macsql.database.execution import ExecutionResult, Outcome, execute_sql
from macsql.database.statement_limits import StatementLimits
from macsql.evals.compare import (
    FIRST_STATEMENT_NOTE,
    bird_equal,
    first_statement,
    normalize_spider_sql,
    order_matters,
    spider_equal,
)
from macsql.evals.datasets import Dataset, EvalItem
from macsql.evals.predictions import NO_PREDICTION
from macsql.evals.ves import measure_time_ratio, r_ves, ves

_VOLATILE = re.compile(r"random|'now'|current_(date|time|timestamp)|changes\s*\(", re.IGNORECASE)
"""Functions whose value can change between two runs of the same query."""

SCORING_MAX_ROWS = 1_000_000
"""The most rows a scored query may return; no gold result of Spider or BIRD dev comes near."""
SCORING_MAX_BYTES = 256 * 1024 * 1024
"""The byte budget of one scored result (see `execute_sql`)."""

OFFICIAL_TIMEOUTS = {"spider": 60.0, "bird": 30.0, "sparc": 60.0, "cosql": 60.0}
"""Seconds per query in the official scorers (test-suite, which also scores SParC and CoSQL:
60; BIRD: 30)."""


class Reason(StrEnum):
    """Why an item is not correct (or not scored)."""

    MISMATCH = "mismatch"
    PRED_ERROR = "pred_error"
    TIMEOUT = "timeout"
    TOO_LARGE = "too_large"
    NO_PREDICTION = "no_prediction"
    GOLD_ERROR = "gold_error"
    GOLD_TIMEOUT = "gold_timeout"
    SKIPPED = "skipped"
    SCORING_ERROR = "scoring_error"
    """The scorer itself failed on the item (the run goes on; the item scores 0)."""


@dataclass
class ItemScore:
    index: int
    db_id: str
    level: str
    correct: bool | None
    """None when the item is not scored (skipped)."""
    reason: Reason | None = None
    """None when correct."""
    detail: str | None = None

    @property
    def scored(self) -> bool:
        return self.correct is not None

    def to_json(self) -> dict[str, Any]:
        """The per-item record of ``score --json``."""
        return {
            "index": self.index,
            "db_id": self.db_id,
            "correct": self.correct,
            "hardness": self.level,
            "reason": self.reason,
            "detail": self.detail,
        }


@dataclass
class _Run:
    """A query's outcome, reduced to what comparison needs."""

    ok: bool
    rows: list[tuple[Any, ...]]
    timeout: bool = False
    error: str | None = None
    too_large: bool = False

    @classmethod
    def of(cls, result: ExecutionResult, max_rows: int) -> _Run:
        if result.truncated:  # a capped result cannot be compared
            return cls(False, [], error=f"more than {max_rows:,} rows", too_large=True)
        if result.outcome.ran:
            return cls(True, result.rows)
        return cls(
            False,
            [],
            result.outcome == Outcome.TIMEOUT,
            f"{result.outcome}: {result.error}",
            result.outcome == Outcome.TOO_LARGE,
        )

    @property
    def failure(self) -> Reason:
        """The reason of a failed predicted run."""
        if self.timeout:
            return Reason.TIMEOUT
        return Reason.TOO_LARGE if self.too_large else Reason.PRED_ERROR


class Scorer:
    """Scores one prediction at a time; thread-safe; caches gold results."""

    def __init__(
        self,
        dataset: str,
        *,
        timeout: float | None = None,
        keep_distinct: bool = False,
        max_rows: int = SCORING_MAX_ROWS,
        max_bytes: int = SCORING_MAX_BYTES,
        allowed_functions: tuple[str, ...] = (),
        allowed_relations: tuple[str, ...] = (),
        limits: StatementLimits | None = None,
    ) -> None:
        """`allowed_functions` and `allowed_relations` extend the guard's allow-lists, and
        `limits` set the statement limits, as the pipeline's Context did, so that scoring
        refuses no prediction the pipeline ran."""
        if dataset not in OFFICIAL_TIMEOUTS:
            raise ValueError(f"unknown dataset {dataset!r}")
        self.dataset = dataset
        self.timeout = timeout if timeout is not None else OFFICIAL_TIMEOUTS[dataset]
        self.keep_distinct = keep_distinct
        self.max_rows = max_rows
        self.max_bytes = max_bytes
        self.guard_lists: dict[str, Any] = {
            "allowed_functions": tuple(allowed_functions),
            "allowed_relations": tuple(allowed_relations),
            "limits": limits,
        }
        self._gold_cache: dict[tuple[str, str], _Run] = {}
        self._refs: dict[str, DatabaseRef] = {}
        self._lock = threading.Lock()

    def _ref(self, db: str) -> DatabaseRef:
        with self._lock:
            ref = self._refs.get(db)
        if ref is None:
            ref = resolve_database(db)
            with self._lock:
                self._refs[db] = ref
        return ref

    def _run(self, db: str, sql: str) -> _Run:
        result = execute_sql(
            self._ref(db),
            sql,
            timeout=self.timeout,
            max_rows=self.max_rows,
            max_bytes=self.max_bytes,
            **self.guard_lists,
        )
        return _Run.of(result, self.max_rows)

    def _gold(self, db: str, sql: str) -> _Run:
        key = (db, sql)
        with self._lock:
            cached = self._gold_cache.get(key)
        if cached is None:
            cached = self._run(db, sql)
            with self._lock:
                self._gold_cache[key] = cached
        return cached

    def _prediction(self, db: str, pred_sql: str, gold_sql: str) -> _Run:
        """The predicted query's result; a prediction identical to the gold (as run) shares
        the gold's cached result, unless it could differ between runs (random, 'now')."""
        if pred_sql == gold_sql and not _VOLATILE.search(pred_sql):
            return self._gold(db, gold_sql)
        return self._run(db, pred_sql)

    def score(self, item: EvalItem, pred_sql: str | None) -> ItemScore:
        """Score `pred_sql` for `item` (never raises on bad SQL or a missing database)."""
        if item.skip_reason:
            return ItemScore(
                item.index, item.db_id, item.level, None, Reason.SKIPPED, item.skip_reason
            )
        pred = (pred_sql or "").strip()
        try:
            if not pred or pred == NO_PREDICTION:
                return self._no_prediction(item)
            if self.dataset != "bird":  # Spider's rules, SParC's and CoSQL's
                return self._score_spider(item, pred)
            return self._score_bird(item, pred)
        except DatabaseNotFoundError as exc:
            return ItemScore(item.index, item.db_id, item.level, None, Reason.SKIPPED, str(exc))

    def _no_prediction(self, item: EvalItem) -> ItemScore:
        if self.dataset != "bird":  # Spider's rules, SParC's and CoSQL's
            gold = self._spider_gold_problem(item)
            if gold is not None:
                return gold
        return ItemScore(item.index, item.db_id, item.level, False, Reason.NO_PREDICTION)

    def _spider_gold_problem(self, item: EvalItem) -> ItemScore | None:
        gold_sql = normalize_spider_sql(item.gold_sql, keep_distinct=self.keep_distinct)
        for db in item.db_files or [item.db or ""]:
            gold = self._gold(db, gold_sql)
            if not gold.ok:
                reason = Reason.GOLD_TIMEOUT if gold.timeout else Reason.GOLD_ERROR
                return ItemScore(item.index, item.db_id, item.level, None, reason, gold.error)
        return None

    def _score_spider(self, item: EvalItem, pred_sql: str) -> ItemScore:
        # The official scorer reads the placeholder " value " as 1 in predictions, and (when it
        # removes DISTINCT, its default) runs the first statement only.
        written = pred_sql.replace(" value ", " 1 ")
        pred_sql = normalize_spider_sql(written, keep_distinct=self.keep_distinct)
        note = (
            FIRST_STATEMENT_NOTE
            if not self.keep_distinct and first_statement(written) != written
            else None
        )
        gold_sql = normalize_spider_sql(item.gold_sql, keep_distinct=self.keep_distinct)
        ordered = order_matters(gold_sql)
        for db in item.db_files or [item.db or ""]:
            gold = self._gold(db, gold_sql)
            if not gold.ok:
                reason = Reason.GOLD_TIMEOUT if gold.timeout else Reason.GOLD_ERROR
                return ItemScore(item.index, item.db_id, item.level, None, reason, gold.error)
            pred = self._prediction(db, pred_sql, gold_sql)
            if not pred.ok:
                detail = f"{pred.error}; {note}" if note else pred.error
                return ItemScore(item.index, item.db_id, item.level, False, pred.failure, detail)
            if not spider_equal(gold.rows, pred.rows, ordered=ordered):
                return ItemScore(item.index, item.db_id, item.level, False, Reason.MISMATCH, note)
        return ItemScore(item.index, item.db_id, item.level, True, detail=note)

    def _score_bird(self, item: EvalItem, pred_sql: str) -> ItemScore:
        db = item.db or ""
        pred = self._prediction(db, pred_sql, item.gold_sql)
        if not pred.ok:
            return ItemScore(item.index, item.db_id, item.level, False, pred.failure, pred.error)
        gold = self._gold(db, item.gold_sql)
        if not gold.ok:
            reason = Reason.GOLD_TIMEOUT if gold.timeout else Reason.GOLD_ERROR
            return ItemScore(item.index, item.db_id, item.level, False, reason, gold.error)
        if not bird_equal(pred.rows, gold.rows):
            return ItemScore(item.index, item.db_id, item.level, False, Reason.MISMATCH)
        return ItemScore(item.index, item.db_id, item.level, True)

    def time_ratio(self, item: EvalItem, pred_sql: str, iterations: int) -> float:
        """VES's time ratio of an EX-correct BIRD item (0 if a run fails)."""
        timing = measure_time_ratio(
            self._ref(item.db or ""),
            pred_sql,
            item.gold_sql,
            iterations=iterations,
            timeout=self.timeout,
            max_rows=self.max_rows,
            max_bytes=self.max_bytes,
            **self.guard_lists,
        )
        return timing.ratio


# ---------------------------------------------------------------------------------------------
# Summaries


def _pct(correct: int, total: int) -> float:
    return round(100.0 * correct / total, 2) if total else 0.0


def summarize_scores(scores: Sequence[ItemScore], levels: Sequence[str]) -> dict[str, Any]:
    """EX overall and per level, with counts of skips, errors and timeouts."""
    scored = [s for s in scores if s.scored]
    correct = sum(1 for s in scored if s.correct)
    skipped = [s for s in scores if not s.scored]
    reasons = Counter(s.reason for s in scored if not s.correct)
    by_level: dict[str, dict[str, Any]] = {}
    for level in [*levels, *sorted({s.level for s in scored} - set(levels))]:
        members = [s for s in scored if s.level == level]
        hits = sum(1 for s in members if s.correct)
        by_level[level] = {"count": len(members), "correct": hits, "ex": _pct(hits, len(members))}
    by_level["all"] = {"count": len(scored), "correct": correct, "ex": _pct(correct, len(scored))}
    skip_reasons = Counter(s.detail if s.reason == Reason.SKIPPED else s.reason for s in skipped)
    return {
        "ex": _pct(correct, len(scored)),
        "n_items": len(scores),
        "n_scored": len(scored),
        "n_correct": correct,
        "n_skipped": len(skipped),
        "skip_reasons": dict(sorted(skip_reasons.items())),
        "by_difficulty": by_level,
        "n_mismatch": reasons.get(Reason.MISMATCH, 0),
        "n_errors": reasons.get(Reason.PRED_ERROR, 0),
        "n_no_prediction": reasons.get(Reason.NO_PREDICTION, 0),
        "n_timeouts": reasons.get(Reason.TIMEOUT, 0),
        "n_too_large": reasons.get(Reason.TOO_LARGE, 0),
        "n_first_statement_only": sum(
            1 for s in scores if s.detail and FIRST_STATEMENT_NOTE in s.detail
        ),
        "n_gold_errors": sum(
            1 for s in scores if s.reason in (Reason.GOLD_ERROR, Reason.GOLD_TIMEOUT)
        ),
    }


def summarize_ves(
    scores: Sequence[ItemScore], ratios: Mapping[int, float], levels: Sequence[str], iterations: int
) -> dict[str, Any]:
    """VES and R-VES over the scored items (ratio 0 for items not EX-correct)."""
    scored = [s for s in scores if s.scored]

    def over(members: Sequence[ItemScore]) -> dict[str, float]:
        values = [ratios.get(s.index, 0.0) if s.correct else 0.0 for s in members]
        return {
            "ves": round(ves(values), 2),
            "r_ves": round(r_ves(values), 2),
            "count": len(values),
        }

    overall = over(scored)
    by_level = {level: over([s for s in scored if s.level == level]) for level in levels}
    by_level["all"] = overall
    return {
        "ves": overall["ves"],
        "r_ves": overall["r_ves"],
        "ves_iterations": iterations,
        "ves_by_difficulty": by_level,
    }


# ---------------------------------------------------------------------------------------------
# Scoring a whole predictions file


@dataclass
class ScoreReport:
    scores: list[ItemScore]
    summary: dict[str, Any]

    def to_json(self) -> dict[str, Any]:
        return {"summary": self.summary, "items": [s.to_json() for s in self.scores]}


class PredictionsMismatchError(ValueError):
    """The predictions do not line up with the dataset."""


def align_predictions(
    dataset: Dataset, predictions: Sequence[str] | Mapping[int, str]
) -> list[tuple[EvalItem, str]]:
    """Pair predictions with items: a list by position, a mapping by index.

    Like the official scorers, fewer predictions than items scores the items that have one.
    """
    if isinstance(predictions, Mapping):
        extra = sorted(set(predictions) - {item.index for item in dataset.items})
        if extra:
            raise PredictionsMismatchError(
                f"{len(extra)} predictions have no question (first index {extra[0]}); "
                f"the dataset has {len(dataset.items)} items"
            )
        return [
            (item, predictions[item.index]) for item in dataset.items if item.index in predictions
        ]
    if len(predictions) > len(dataset.items):
        raise PredictionsMismatchError(
            f"{len(predictions)} predictions for {len(dataset.items)} questions"
        )
    return list(zip(dataset.items, predictions, strict=False))


def score_predictions(
    dataset: Dataset,
    predictions: Sequence[str] | Mapping[int, str],
    *,
    timeout: float | None = None,
    keep_distinct: bool = False,
    ves_iterations: int = 0,
    workers: int = 4,
    scorer: Scorer | None = None,
    on_item: Callable[[ItemScore], None] | None = None,
) -> ScoreReport:
    """Score a predictions list/mapping against `dataset`; VES too when `ves_iterations` > 0."""
    scorer = scorer or Scorer(dataset.name, timeout=timeout, keep_distinct=keep_distinct)
    pairs = align_predictions(dataset, predictions)

    def one(pair: tuple[EvalItem, str]) -> ItemScore:
        result = scorer.score(*pair)
        if on_item is not None:
            on_item(result)
        return result

    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        scores = list(pool.map(one, pairs))
    summary = summarize_scores(scores, dataset.levels)
    summary["n_unpredicted"] = len(dataset.items) - len(pairs)
    if dataset.name == "bird" and ves_iterations > 0:
        ratios = time_ratios(scorer, pairs, scores, ves_iterations)
        summary.update(summarize_ves(scores, ratios, dataset.levels, ves_iterations))
    return ScoreReport(scores, summary)


def time_ratios(
    scorer: Scorer,
    pairs: Iterable[tuple[EvalItem, str]],
    scores: Sequence[ItemScore],
    iterations: int,
) -> dict[int, float]:
    """VES time ratios of the EX-correct items, measured one item at a time (less noise)."""
    correct = {s.index for s in scores if s.correct}
    return {
        item.index: scorer.time_ratio(item, sql, iterations)
        for item, sql in pairs
        if item.index in correct
    }


def summary_text(summary: dict[str, Any], levels: Sequence[str]) -> str:
    """A plain-text table in the style of the official scorers."""
    cols = [*levels, "all"]
    by = summary["by_difficulty"]
    lines = [
        "{:20}".format("") + "".join(f"{c:>14}" for c in cols),
        "{:20}".format("count") + "".join(f"{by.get(c, {}).get('count', 0):>14}" for c in cols),
        "{:20}".format("execution (EX)")
        + "".join(f"{by.get(c, {}).get('ex', 0.0):>14.2f}" for c in cols),
    ]
    if "ves_by_difficulty" in summary:
        vb = summary["ves_by_difficulty"]
        for key, label in (("ves", "VES"), ("r_ves", "R-VES")):
            lines.append(
                f"{label:20}" + "".join(f"{vb.get(c, {}).get(key, 0.0):>14.2f}" for c in cols)
            )
    lines.append("")
    lines.append(
        f"scored {summary['n_scored']}, skipped {summary['n_skipped']}, "
        f"errors {summary['n_errors']}, timeouts {summary['n_timeouts']}, "
        f"no prediction {summary['n_no_prediction']}"
    )
    if summary.get("n_unpredicted"):
        lines.append(f"  not in the predictions file: {summary['n_unpredicted']} questions")
    if summary.get("n_too_large"):
        lines.append(f"  results over the scoring bounds: {summary['n_too_large']}")
    if summary.get("n_first_statement_only"):
        lines.append(
            f"  {summary['n_first_statement_only']} predictions held several statements: "
            "each was scored on its first, as the official Spider evaluator does"
        )
    for reason, count in summary.get("skip_reasons", {}).items():
        lines.append(f"  skipped {count}: {reason}")
    return "\n".join(lines)


def item_score_from_json(data: Mapping[str, Any]) -> ItemScore:
    return ItemScore(
        index=int(data["index"]),
        db_id=str(data["db_id"]),
        level=str(data.get("hardness") or data.get("level") or "unknown"),
        correct=data.get("correct"),
        reason=_reason(data.get("reason")),
        detail=data.get("detail"),
    )


def _reason(value: Any) -> Reason | None:
    """A record's reason; one this version does not know (a hand-edited file) reads as none."""
    try:
        return Reason(value) if value else None
    except ValueError:
        return None
