"""A SParC / CoSQL run's summary: ``summary.md`` and ``summary.svg`` with the conversation
figures (question and interaction EX and exact match, by turn) before Spider's tables."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from macsql.database.atomic_files import write_text_atomically
from macsql.evals.interaction_scoring import TURN_BUCKETS
from macsql.evals.report import BLUE, ORANGE, _table, ex_by_difficulty, render_markdown
from macsql.evals.svg_chart import Panel, Series, write_svg


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
    lines += ["", "![EX by turn and by difficulty](summary.svg)"]
    return "\n".join(lines) + "\n"


def render_conversation_chart(
    summary: Mapping[str, Any], levels: Sequence[str], path: Path
) -> Path:
    """EX and exact match by turn, with the interaction figures; EX by difficulty (SVG)."""
    conv = summary["conversations"]
    names = [f"turn {b}" for b in TURN_BUCKETS] + ["interaction"]
    ex = [float(conv["by_turn"][b]["ex"]) for b in TURN_BUCKETS] + [float(conv["interaction_ex"])]
    em = [float(conv["by_turn"][b]["exact"]) for b in TURN_BUCKETS]
    em.append(float(conv["interaction_exact"]))
    by_turn = Panel(
        "By turn, and whole interactions",
        "%",
        names,
        [
            Series("EX", ex, [f"{v:.1f}" for v in ex], [BLUE]),
            Series("EM", em, [f"{v:.1f}" for v in em], [ORANGE]),
        ],
        y_max=105,
    )
    by_level = ex_by_difficulty(summary, levels, "Question EX by difficulty")
    return write_svg(path, [by_turn, by_level])


def write_conversation_reports(
    out: Path, summary: Mapping[str, Any], levels: Sequence[str]
) -> None:
    """``summary.json``, ``summary.md`` and ``summary.svg`` in `out`."""
    out.mkdir(parents=True, exist_ok=True)
    write_text_atomically(out / "summary.json", json.dumps(summary, indent=2) + "\n")
    render_conversation_chart(summary, levels, out / "summary.svg")
    write_text_atomically(out / "summary.md", render_conversation_markdown(summary, levels))
