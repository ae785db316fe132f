"""A SParC / CoSQL run's summary: ``summary.md`` and ``summary.png`` with the conversation
figures (question and interaction EX and exact match, by turn) before Spider's tables."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from macsql.database.atomic_files import replacing, write_text_atomically
from macsql.evals.interaction_scoring import TURN_BUCKETS
from macsql.evals.report import _table, render_markdown


def render_conversation_markdown(summary: Mapping[str, Any], levels: Sequence[str]) -> str:
    conv = summary["conversations"]
    base = render_markdown(summary, levels, chart_name=None)
    title, _, rest = base.partition("\n\n")
    lines = [
        title,
        "",
        f"**Question EX {conv['question_ex']:.2f}, interaction EX {conv['interaction_ex']:.2f}** "
        f"over {conv['n_interactions_scored']} interactions "
        f"({conv['n_interactions_skipped']} skipped); exact match "
        f"{conv['question_exact']:.2f} / {conv['interaction_exact']:.2f}.",
        "",
        f"Earlier turns' SQL: {summary.get('previous_sql')}.",
        "",
        "## By turn",
        "",
    ]
    by_turn = conv["by_turn"]
    lines += _table(
        ["turn", "count", "EX", "exact match"],
        [
            [b, by_turn[b]["count"], f"{by_turn[b]['ex']:.2f}", f"{by_turn[b]['exact']:.2f}"]
            for b in TURN_BUCKETS
        ],
    )
    lines += ["", "## Questions (each turn alone)", "", rest.rstrip("\n")]
    lines += ["", "![EX by turn and by difficulty](summary.png)"]
    return "\n".join(lines) + "\n"


def render_conversation_chart(
    summary: Mapping[str, Any], levels: Sequence[str], path: Path
) -> Path:
    """EX and exact match by turn, with the interaction figures; EX by difficulty."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    conv = summary["conversations"]
    fig = Figure(figsize=(10, 4), dpi=100)
    FigureCanvasAgg(fig)
    ax_turn, ax_level = fig.subplots(1, 2)
    names = [f"turn {b}" for b in TURN_BUCKETS] + ["interaction"]
    ex = [conv["by_turn"][b]["ex"] for b in TURN_BUCKETS] + [conv["interaction_ex"]]
    em = [conv["by_turn"][b]["exact"] for b in TURN_BUCKETS] + [conv["interaction_exact"]]
    positions = range(len(names))
    bars = ax_turn.bar([p - 0.2 for p in positions], ex, width=0.4, label="EX", color="#4c72b0")
    ax_turn.bar_label(bars, labels=[f"{v:.1f}" for v in ex], fontsize=7)
    bars = ax_turn.bar([p + 0.2 for p in positions], em, width=0.4, label="EM", color="#dd8452")
    ax_turn.bar_label(bars, labels=[f"{v:.1f}" for v in em], fontsize=7)
    ax_turn.set_xticks(list(positions), names, fontsize=8)
    ax_turn.set_ylim(0, 105)
    ax_turn.set_ylabel("%")
    ax_turn.set_title("By turn, and whole interactions")
    ax_turn.legend(fontsize=8)
    by = summary["by_difficulty"]
    cols = [*levels, "all"]
    values = [by.get(n, {}).get("ex", 0.0) for n in cols]
    bars = ax_level.bar(cols, values, color=["#4c72b0"] * len(levels) + ["#dd8452"])
    ax_level.bar_label(bars, labels=[f"{v:.1f}" for v in values], fontsize=8)
    ax_level.set_ylim(0, 105)
    ax_level.set_ylabel("EX (%)")
    ax_level.set_title("Question EX by difficulty")
    fig.tight_layout()
    with replacing(path) as tmp:
        fig.savefig(tmp, format="png")
    return path


def write_conversation_reports(
    out: Path, summary: Mapping[str, Any], levels: Sequence[str]
) -> None:
    """``summary.json``, ``summary.md`` and ``summary.png`` in `out`."""
    out.mkdir(parents=True, exist_ok=True)
    write_text_atomically(out / "summary.json", json.dumps(summary, indent=2) + "\n")
    render_conversation_chart(summary, levels, out / "summary.png")
    write_text_atomically(out / "summary.md", render_conversation_markdown(summary, levels))
