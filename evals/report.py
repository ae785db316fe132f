"""Run summaries: ``summary.json``, ``summary.md`` and a chart, ``summary.svg``."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from macsql.database.atomic_files import write_text_atomically
from macsql.evals.datasets import Dataset
from macsql.evals.scoring import (
    OFFICIAL_TIMEOUTS,
    item_score_from_json,
    summarize_scores,
    summarize_ves,
)
from macsql.evals.svg_chart import Panel, Series, write_svg

USAGE_FIELDS = ("calls", "input_tokens", "output_tokens", "latency_s")


def total_usage(records: Sequence[Mapping[str, Any]]) -> dict[str, dict[str, float]]:
    """Per agent: model calls, input and output tokens and latency, summed over the records."""
    totals: dict[str, dict[str, float]] = {}
    for record in records:
        for agent, usage in (record.get("usage") or {}).items():
            if not isinstance(usage, Mapping):
                continue
            slot = totals.setdefault(agent, dict.fromkeys(USAGE_FIELDS, 0))
            for key in USAGE_FIELDS:
                value = usage.get(key) or 0
                if isinstance(value, int | float):
                    slot[key] += value
            reasoning = usage.get("reasoning_tokens") or 0  # only reasoning models report it
            if isinstance(reasoning, int | float) and reasoning:
                slot["reasoning_tokens"] = slot.get("reasoning_tokens", 0) + reasoning
    for slot in totals.values():
        slot["latency_s"] = round(float(slot["latency_s"]), 3)
    return dict(sorted(totals.items()))


def build_summary(
    dataset: Dataset,
    records: Sequence[Mapping[str, Any]],
    *,
    options: Any,
    wall_time_s: float,
    wall_time_total_s: float | None = None,
    ves_ratios: Mapping[int, float] | None = None,
) -> dict[str, Any]:
    """The figures of a run, from its per-item records."""
    scores = [item_score_from_json({**r, "hardness": r.get("level")}) for r in records]
    summary: dict[str, Any] = {
        "dataset": dataset.name,
        "split": dataset.split,
        "mode": "gold" if options.gold else "pipeline",
        "pipeline": None if options.gold else options.pipeline,
        "model": None if options.gold else options.model,
        "n_items_in_dataset": len(dataset.items),
    }
    summary.update(summarize_scores(scores, dataset.levels))
    predicted = [r for r in records if r.get("status") != "skipped"]
    attempts = Counter(int(r.get("attempts") or 0) for r in predicted)
    summary["n_failed"] = sum(1 for r in predicted if r.get("status") == "failed")
    summary["mean_attempts"] = (
        round(sum(k * v for k, v in attempts.items()) / len(predicted), 3) if predicted else 0.0
    )
    summary["attempts_histogram"] = {str(k): attempts[k] for k in sorted(attempts)}
    summary["selector_rate"] = (
        round(sum(1 for r in predicted if r.get("selector_used")) / len(predicted), 4)
        if predicted
        else 0.0
    )
    usage = total_usage(predicted)
    summary["tokens_per_agent"] = usage
    # Replies an agent could not use as asked, by agent and kind (e.g. "decomposer: no_sql").
    fallbacks = Counter(
        f"{f.get('agent')}: {f.get('kind')}"
        for r in predicted
        for f in r.get("fallbacks") or []
        if isinstance(f, Mapping)
    )
    summary["fallbacks"] = dict(sorted(fallbacks.items()))
    summary["tokens_total"] = {
        key: round(sum(u[key] for u in usage.values()), 3) for key in USAGE_FIELDS
    }
    if ves_ratios is not None:
        summary.update(
            summarize_ves(scores, ves_ratios, dataset.levels, getattr(options, "ves_iterations", 0))
        )
    summary["timeout_s"] = options.timeout or OFFICIAL_TIMEOUTS[dataset.name]
    summary["keep_distinct"] = bool(options.keep_distinct)
    summary["wall_time_s"] = round(wall_time_s, 3)
    if wall_time_total_s is not None:
        summary["wall_time_total_s"] = round(wall_time_total_s, 3)
    return summary


def _table(header: Sequence[str], rows: Sequence[Sequence[Any]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return lines


def render_markdown(
    summary: Mapping[str, Any], levels: Sequence[str], chart_name: str | None = "summary.svg"
) -> str:
    mode = summary.get("pipeline") or summary.get("mode")
    lines = [f"# {summary['dataset']} {summary['split']}: {mode}", ""]
    if summary.get("problem"):  # the figures below do not measure the model
        lines += [f"**The run failed:** {summary['problem']}", ""]
    lines += [
        f"**EX {summary['ex']:.2f}** on {summary['n_scored']} scored items "
        f"({summary['n_skipped']} skipped)."
    ]
    if "ves" in summary:
        lines[-1] += f" VES {summary['ves']:.2f}, R-VES {summary['r_ves']:.2f}."
    lines += ["", "## By difficulty", ""]
    by = summary["by_difficulty"]
    has_ves = "ves_by_difficulty" in summary
    header = ["level", "count", "correct", "EX"] + (["VES", "R-VES"] if has_ves else [])
    rows = []
    for level in [*levels, "all"]:
        entry = by.get(level, {"count": 0, "correct": 0, "ex": 0.0})
        row = [level, entry["count"], entry["correct"], f"{entry['ex']:.2f}"]
        if has_ves:
            v = summary["ves_by_difficulty"].get(level, {})
            row += [f"{v.get('ves', 0.0):.2f}", f"{v.get('r_ves', 0.0):.2f}"]
        rows.append(row)
    lines += _table(header, rows)
    lines += ["", "## Outcomes", ""]
    lines += _table(
        ["", "count"],
        [
            ["scored", summary["n_scored"]],
            ["correct", summary["n_correct"]],
            ["wrong result", summary["n_mismatch"]],
            ["SQL errors", summary["n_errors"]],
            ["timeouts", summary["n_timeouts"]],
            ["no prediction", summary["n_no_prediction"]],
            ["pipeline failures", summary.get("n_failed", 0)],
            ["gold errors", summary["n_gold_errors"]],
            ["skipped", summary["n_skipped"]],
        ],
    )
    if summary.get("skip_reasons"):
        lines += ["", "Skipped items:", ""]
        lines += [f"- {count}: {reason}" for reason, count in summary["skip_reasons"].items()]
    lines += ["", "## Attempts and Selector", ""]
    lines += [
        f"Mean SQL executions per item: {summary.get('mean_attempts', 0.0)}; "
        f"Selector used on {100 * summary.get('selector_rate', 0.0):.1f}% of items.",
        "",
    ]
    hist = summary.get("attempts_histogram", {})
    lines += _table(["attempts", "items"], [[k, v] for k, v in hist.items()])
    if summary.get("fallbacks"):
        lines += ["", "Replies not usable as asked (agent: kind, items):", ""]
        lines += [f"- {key}: {count}" for key, count in summary["fallbacks"].items()]
    usage = summary.get("tokens_per_agent") or {}
    if usage:
        lines += ["", "## Model usage per agent", ""]
        lines += _table(
            ["agent", "calls", "input tokens", "output tokens", "latency (s)"],
            [
                [
                    a,
                    int(u["calls"]),
                    int(u["input_tokens"]),
                    int(u["output_tokens"]),
                    f"{u['latency_s']:.1f}",
                ]
                for a, u in usage.items()
            ],
        )
    lines += [
        "",
        f"Wall time: {summary.get('wall_time_s', 0.0):.1f} s"
        + (
            f" (all invocations: {summary['wall_time_total_s']:.1f} s)"
            if "wall_time_total_s" in summary
            else ""
        )
        + f". Query timeout {summary.get('timeout_s')} s; DISTINCT "
        + ("kept" if summary.get("keep_distinct") else "removed (official default)")
        + ".",
    ]
    if chart_name:
        lines += ["", f"![EX by difficulty and attempts]({chart_name})"]
    return "\n".join(lines) + "\n"


BLUE, ORANGE, GREEN = "#4c72b0", "#dd8452", "#55a868"


def ex_by_difficulty(summary: Mapping[str, Any], levels: Sequence[str], title: str) -> Panel:
    """EX of each difficulty level and of all items, the last bar set apart by its colour."""
    names = [*levels, "all"]
    by = summary["by_difficulty"]
    values = [float(by.get(n, {}).get("ex", 0.0)) for n in names]
    ex = Series("EX", values, [f"{v:.1f}" for v in values], [BLUE] * len(levels) + [ORANGE])
    return Panel(title, "EX (%)", names, [ex], y_max=105)


def chart_panels(summary: Mapping[str, Any], levels: Sequence[str]) -> list[Panel]:
    """Two bar charts: EX by difficulty, and how many items took each number of attempts."""
    hist = summary.get("attempts_histogram") or {}
    counts = [float(v) for v in hist.values()]
    items = Series("items", counts, [str(v) for v in hist.values()], [GREEN])
    attempts = Panel(
        "Attempts", "items", list(hist), [items], x_label="SQL executions per item", integer=True
    )
    return [ex_by_difficulty(summary, levels, "Execution accuracy by difficulty"), attempts]


def render_chart(summary: Mapping[str, Any], levels: Sequence[str], path: Path) -> Path:
    """The chart of `chart_panels`, as an SVG document (`svg_chart` says why not a plotting
    library's)."""
    return write_svg(path, chart_panels(summary, levels))


def write_reports(out: Path, summary: Mapping[str, Any], levels: Sequence[str]) -> None:
    """``summary.json``, ``summary.md`` and ``summary.svg`` in `out`."""
    out.mkdir(parents=True, exist_ok=True)
    write_text_atomically(out / "summary.json", json.dumps(summary, indent=2) + "\n")
    render_chart(summary, levels, out / "summary.svg")
    write_text_atomically(out / "summary.md", render_markdown(summary, levels))
