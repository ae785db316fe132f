"""BIRD's Valid Efficiency Score (VES) and mini-dev's reward-based VES (R-VES).

For an EX-correct item, the gold and predicted queries each run `iterations` times (100
officially). The ratios gold_time / pred_time outside mean ± 3σ are dropped and the rest are
averaged: that is the item's time ratio r. Items that are not EX-correct have r = 0.

- VES (BIRD, as the MAC-SQL paper reports it) = mean over all items of √r, × 100.
- R-VES (BIRD mini-dev) maps r to a reward: 1.25 if r ≥ 2, 1 if r ≥ 1, 0.75 if r ≥ 0.5,
  0.5 if r ≥ 0.25, else 0.25 (and 0 for r = 0); R-VES = mean of √reward, × 100.

One deviation: when every ratio is the same (σ = 0, as with a single iteration), the official
filter keeps nothing and the item fails with a division by zero, scoring 0. Here all ratios
are kept instead.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from macsql.database.connection import DatabaseRef
from macsql.database.execution import DEFAULT_MAX_RESULT_BYTES, execute_sql
from macsql.database.statement_limits import StatementLimits

OFFICIAL_ITERATIONS = 100


def drop_outliers(values: Sequence[float]) -> list[float]:
    """Values strictly inside mean ± 3σ (population σ); all of them if that leaves none."""
    if not values:
        return []
    mean = sum(values) / len(values)
    std = math.sqrt(sum((v - mean) ** 2 for v in values) / len(values))
    kept = [v for v in values if mean - 3 * std < v < mean + 3 * std]
    return kept or list(values)


def time_ratio(gold_times: Sequence[float], pred_times: Sequence[float]) -> float:
    """r: the mean of gold_time / pred_time per run, outliers dropped."""
    if len(gold_times) != len(pred_times) or not gold_times:
        raise ValueError("time_ratio needs as many gold as predicted timings, at least one")
    ratios = [g / p if p > 0 else 0.0 for g, p in zip(gold_times, pred_times, strict=True)]
    kept = drop_outliers(ratios)
    return sum(kept) / len(kept)


def reward(ratio: float) -> float:
    """R-VES's reward for a time ratio (0 for an incorrect item)."""
    if ratio <= 0:
        return 0.0
    if ratio >= 2:
        return 1.25
    if ratio >= 1:
        return 1.0
    if ratio >= 0.5:
        return 0.75
    if ratio >= 0.25:
        return 0.5
    return 0.25


def ves(ratios: Sequence[float]) -> float:
    """VES over all items: mean of √r × 100 (r = 0 for items that are not EX-correct)."""
    if not ratios:
        return 0.0
    return sum(math.sqrt(max(r, 0.0)) for r in ratios) * 100 / len(ratios)


def r_ves(ratios: Sequence[float]) -> float:
    """R-VES over all items: mean of √reward(r) × 100."""
    if not ratios:
        return 0.0
    return sum(math.sqrt(reward(r)) for r in ratios) * 100 / len(ratios)


@dataclass
class Timing:
    ratio: float
    """0 when a run failed or timed out."""
    runs: int
    error: str | None = None


def measure_time_ratio(
    db: DatabaseRef,
    pred_sql: str,
    gold_sql: str,
    *,
    iterations: int = OFFICIAL_ITERATIONS,
    timeout: float = 30.0,
    max_rows: int | None = None,
    max_bytes: int = DEFAULT_MAX_RESULT_BYTES,
    allowed_functions: tuple[str, ...] = (),
    allowed_relations: tuple[str, ...] = (),
    limits: StatementLimits | None = None,
) -> Timing:
    """Run both queries `iterations` times, alternating, and return the item's time ratio.

    Each run is bounded by `timeout` (it really interrupts); any failure scores the item 0, as
    in the official scorer. Timings are the database's (connection, execution and fetch).
    """
    gold_times: list[float] = []
    pred_times: list[float] = []
    for _ in range(max(1, iterations)):
        pred, gold = (
            execute_sql(
                db,
                sql,
                timeout=timeout,
                max_rows=max_rows,
                max_bytes=max_bytes,
                allowed_functions=allowed_functions,
                allowed_relations=allowed_relations,
                limits=limits,
            )
            for sql in (pred_sql, gold_sql)
        )
        for result in (pred, gold):
            if not result.outcome.ran or result.truncated:
                return Timing(0.0, len(pred_times), f"{result.outcome}: {result.error}")
        pred_times.append(pred.elapsed)
        gold_times.append(gold.elapsed)
    return Timing(time_ratio(gold_times, pred_times), len(pred_times))
