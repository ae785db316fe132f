"""The summary chart is an SVG document written directly: on generated summaries it parses,
each bar stands for its value on the panel's axis, and every label is there, as given."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest
from chart_support import ChartPanel, ex_labels, read_chart

from macsql.evals.conversation_report import render_conversation_chart
from macsql.evals.interaction_scoring import TURN_BUCKETS
from macsql.evals.report import render_chart

NAMES = ["easy", "medium", "<hard>", "a & b", 'say "x"', "it's", "çà", "日本語", "x" * 30]
NAMES.append("\x07bell")  # a character XML cannot hold


def _value(rng: random.Random) -> float:
    return rng.choice([0.0, 100.0, round(rng.uniform(0, 100), 2), 50.0])


def _summary(rng: random.Random) -> tuple[dict[str, Any], list[str]]:
    levels = rng.sample(NAMES, rng.randint(0, 5))
    by = {name: {"ex": _value(rng)} for name in levels if rng.random() < 0.8}  # some missing
    by["all"] = {"ex": _value(rng)}
    keys = rng.choice([0, 1, 3, 40])
    hist = {str(k): rng.choice([0, 1, rng.randint(0, 600)]) for k in range(keys)}
    conv = {
        "by_turn": {b: {"ex": _value(rng), "exact": _value(rng)} for b in TURN_BUCKETS},
        "interaction_ex": _value(rng),
        "interaction_exact": _value(rng),
    }
    summary = {"by_difficulty": by, "attempts_histogram": hist, "conversations": conv}
    return summary, levels


def _shown(label: str) -> str:
    """A label as the chart shows it: characters XML cannot hold become U+FFFD."""
    return "".join("\ufffd" if ord(c) < 32 else c for c in label)


def _check_bars(panel: ChartPanel, values: list[float], labels: list[str]) -> None:
    assert len(panel.bar_heights) == len(values) == len(panel.value_labels)
    assert panel.value_labels == labels
    for value, height, bottom in zip(values, panel.bar_heights, panel.bar_bottoms, strict=True):
        assert height == pytest.approx(value * panel.unit, abs=0.03), (panel.title, value)
        assert bottom == pytest.approx(panel.baseline, abs=0.02)
    # Evenly spaced ticks, none above the axis's top.
    steps = {round(b - a, 6) for a, b in zip(panel.ticks, panel.ticks[1:], strict=False)}
    assert len(steps) == 1
    assert all(t <= panel.y_top + 1e-6 for t in panel.ticks)
    assert 2 <= len(panel.ticks) <= 8


def _check_ex_panel(panel: ChartPanel, summary: dict[str, Any], levels: list[str]) -> None:
    by = summary["by_difficulty"]
    assert panel.categories == [_shown(n) for n in [*levels, "all"]]
    values = [by.get(n, {}).get("ex", 0.0) for n in [*levels, "all"]]
    _check_bars(panel, values, ex_labels(summary, levels))
    assert panel.y_top == pytest.approx(105, abs=0.01)


def test_generated_summaries_give_charts_whose_bars_and_labels_are_the_figures(
    tmp_path: Path,
) -> None:
    rng = random.Random(35)
    names: set[str] = set()
    values: set[float] = set()
    sizes: set[int] = set()
    for case in range(60):
        summary, levels = _summary(rng)
        names |= set(levels)
        values |= {v["ex"] for v in summary["by_difficulty"].values()}
        sizes.add(len(summary["attempts_histogram"]))
        path = render_chart(summary, levels, tmp_path / f"{case}.svg")
        ex, attempts = read_chart(path)
        _check_ex_panel(ex, summary, levels)
        hist = summary["attempts_histogram"]
        assert attempts.categories == list(hist)
        counts = [float(v) for v in hist.values()]
        _check_bars(attempts, counts, [str(v) for v in hist.values()])
        # Counts: whole ticks, and the top one reaches the largest count without a wasted step.
        assert all(t == int(t) for t in attempts.ticks)
        step = attempts.ticks[1] - attempts.ticks[0]
        assert max(counts, default=0) <= attempts.ticks[-1] < max(counts, default=0) + step + 1
        # The same summary gives the same bytes.
        again = render_chart(summary, levels, tmp_path / "again.svg")
        assert again.read_bytes() == path.read_bytes()
    # The generator reached every label, both ends of the percentages, an empty histogram and
    # one with many keys.
    assert names == set(NAMES) and {0.0, 100.0} <= values and {0, 40} <= sizes


def test_generated_conversation_summaries_give_grouped_bars_with_a_legend(tmp_path: Path) -> None:
    rng = random.Random(36)
    for case in range(30):
        summary, levels = _summary(rng)
        path = render_conversation_chart(summary, levels, tmp_path / f"{case}.svg")
        by_turn, ex = read_chart(path)
        conv = summary["conversations"]
        assert by_turn.categories == [f"turn {b}" for b in TURN_BUCKETS] + ["interaction"]
        ex_values = [conv["by_turn"][b]["ex"] for b in TURN_BUCKETS] + [conv["interaction_ex"]]
        em_values = [conv["by_turn"][b]["exact"] for b in TURN_BUCKETS]
        em_values.append(conv["interaction_exact"])
        values = ex_values + em_values
        _check_bars(by_turn, values, [f"{v:.1f}" for v in values])
        assert by_turn.y_top == pytest.approx(105, abs=0.01)
        _check_ex_panel(ex, summary, levels)
        text = path.read_text(encoding="utf-8")
        assert 'class="legend"' in text and ">EX</text>" in text and ">EM</text>" in text
        assert render_conversation_chart(summary, levels, tmp_path / "b.svg").read_bytes() == (
            path.read_bytes()
        )
