"""SParC and CoSQL scores, as the official evaluator (test-suite-sql-eval) reports them.

- **Question match**: each turn scored alone, with Spider's execution rules (`Scorer`) and with
  exact set match (`ExactMatcher`).
- **Interaction match**: an interaction counts only when every one of its turns is right.
- By turn index (1, 2, 3, 4+), the figure papers report, and by Spider hardness.

An interaction whose database is missing is skipped whole; a turn whose gold fails to run is a
dataset error (skipped, as for Spider), and its interaction is left out of the interaction
figures. Unlike the official evaluator, which stops at the shorter of a predicted and a gold
session, a turn with no prediction scores 0.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from macsql.evals.datasets import Dataset, EvalItem, Interaction
from macsql.evals.exact_match import ExactMatcher
from macsql.evals.scoring import (
    ItemScore,
    PredictionsMismatchError,
    Scorer,
    item_score_from_json,
    summarize_scores,
    summary_text,
)
from macsql.evals.spider_sql_parse import HardnessParseError

TURN_BUCKETS = ("1", "2", "3", "4+")


def turn_bucket(turn: int) -> str:
    """The by-turn column of a turn (0 for the first)."""
    return TURN_BUCKETS[min(turn, 3)]


def exact_match_of(matcher: ExactMatcher, item: EvalItem, prediction: str) -> bool | None:
    """Exact set match of one turn; None when it is not scored (no database, or a gold the
    official parser cannot read)."""
    if item.skip_reason or not item.db:
        return None
    try:
        return matcher.match(item.db_id, item.db, prediction or "", item.gold_sql)
    except HardnessParseError:
        return None


def _pct(hits: int, total: int) -> float:
    return round(100.0 * hits / total, 2) if total else 0.0


def summarize_interactions(
    interactions: Sequence[Interaction], records: Mapping[int, Mapping[str, Any]]
) -> dict[str, Any]:
    """Question and interaction EX and exact match, by turn, over the interactions whose turns
    all have a record (`records`: per-turn records by item index, with `correct`, `exact`)."""
    complete = [i for i in interactions if i.turns and all(t.index in records for t in i.turns)]
    scored = [
        i for i in complete if all(records[t.index].get("correct") is not None for t in i.turns)
    ]
    turns = [records[t.index] for i in complete for t in i.turns]
    by_turn: dict[str, dict[str, Any]] = {}
    for bucket in TURN_BUCKETS:
        members = [
            records[t.index]
            for i in complete
            for t in i.turns
            if turn_bucket(t.turn or 0) == bucket and records[t.index].get("correct") is not None
        ]
        ex = sum(1 for r in members if r.get("correct"))
        em = sum(1 for r in members if r.get("exact"))
        by_turn[bucket] = {
            "count": len(members),
            "ex": _pct(ex, len(members)),
            "exact": _pct(em, len(members)),
        }
    question = [r for r in turns if r.get("correct") is not None]
    interaction_ex = sum(1 for i in scored if all(records[t.index].get("correct") for t in i.turns))
    interaction_em = sum(1 for i in scored if all(records[t.index].get("exact") for t in i.turns))
    return {
        "n_interactions": len(complete),
        "n_interactions_scored": len(scored),
        "n_interactions_skipped": len(complete) - len(scored),
        "question_ex": _pct(sum(1 for r in question if r.get("correct")), len(question)),
        "question_exact": _pct(sum(1 for r in question if r.get("exact")), len(question)),
        "interaction_ex": _pct(interaction_ex, len(scored)),
        "interaction_exact": _pct(interaction_em, len(scored)),
        "n_interaction_ex": interaction_ex,
        "n_interaction_exact": interaction_em,
        "by_turn": by_turn,
    }


def conversation_text(summary: Mapping[str, Any]) -> str:
    """The question / interaction table and the by-turn table, in the official style."""
    conv = summary["conversations"]
    cols = ["question", "interaction"]
    lines = [
        "{:20}".format("") + "".join(f"{c:>14}" for c in cols),
        "{:20}".format("count")
        + f"{summary.get('n_scored', 0):>14}{conv['n_interactions_scored']:>14}",
        "{:20}".format("execution (EX)")
        + f"{conv['question_ex']:>14.2f}{conv['interaction_ex']:>14.2f}",
        "{:20}".format("exact match (EM)")
        + f"{conv['question_exact']:>14.2f}{conv['interaction_exact']:>14.2f}",
        "",
        "{:20}".format("turn") + "".join(f"{b:>14}" for b in TURN_BUCKETS),
    ]
    by_turn = conv["by_turn"]
    lines.append(
        "{:20}".format("count") + "".join(f"{by_turn[b]['count']:>14}" for b in TURN_BUCKETS)
    )
    lines.append(
        "{:20}".format("execution (EX)")
        + "".join(f"{by_turn[b]['ex']:>14.2f}" for b in TURN_BUCKETS)
    )
    lines.append(
        "{:20}".format("exact match (EM)")
        + "".join(f"{by_turn[b]['exact']:>14.2f}" for b in TURN_BUCKETS)
    )
    if summary.get("previous_sql"):
        lines += ["", f"previous turns' SQL: {summary['previous_sql']}"]
    return "\n".join(lines)


@dataclass
class ConversationScoreReport:
    records: dict[int, dict[str, Any]]
    summary: dict[str, Any]

    def to_json(self) -> dict[str, Any]:
        return {"summary": self.summary, "items": [self.records[i] for i in sorted(self.records)]}

    def text(self, levels: Sequence[str]) -> str:
        return summary_text(self.summary, levels) + "\n\n" + conversation_text(self.summary)


def align_sessions(
    dataset: Dataset, sessions: Sequence[Sequence[str]]
) -> list[tuple[Interaction, list[str]]]:
    """Pair predicted sessions with interactions, in order. Fewer sessions than interactions
    scores those that have one; a session with more turns than its interaction is an error."""
    if len(sessions) > len(dataset.interactions):
        raise PredictionsMismatchError(
            f"{len(sessions)} predicted interactions for {len(dataset.interactions)} in the "
            "dataset (one SQL per line, an empty line after each interaction)"
        )
    pairs = []
    for interaction, session in zip(dataset.interactions, sessions, strict=False):
        if len(session) > len(interaction.turns):
            raise PredictionsMismatchError(
                f"interaction {interaction.index} has {len(interaction.turns)} turns but "
                f"{len(session)} predicted lines: is an empty line missing between interactions?"
            )
        pairs.append((interaction, list(session)))
    return pairs


def score_sessions(
    dataset: Dataset,
    sessions: Sequence[Sequence[str]],
    *,
    scorer: Scorer | None = None,
    timeout: float | None = None,
    keep_distinct: bool = False,
    workers: int = 4,
    on_item: Callable[[ItemScore], None] | None = None,
) -> ConversationScoreReport:
    """Score a predictions file's sessions (`read_interaction_predictions`) against `dataset`."""
    scorer = scorer or Scorer(dataset.name, timeout=timeout, keep_distinct=keep_distinct)
    matcher = ExactMatcher(dataset.tables)
    pairs = [
        (turn, session[turn.turn or 0] if (turn.turn or 0) < len(session) else "")
        for interaction, session in align_sessions(dataset, sessions)
        for turn in interaction.turns
    ]

    def one(pair: tuple[EvalItem, str]) -> dict[str, Any]:
        item, sql = pair
        score = scorer.score(item, sql)
        if on_item is not None:
            on_item(score)
        return {
            **score.to_json(),
            "interaction": item.interaction,
            "turn": item.turn,
            "prediction": sql,
            "exact": exact_match_of(matcher, item, sql) if score.scored else None,
        }

    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        records = {r["index"]: r for r in pool.map(one, pairs)}
    scores = [item_score_from_json(r) for r in records.values()]
    summary = summarize_scores(scores, dataset.levels)
    summary["n_unpredicted"] = len(dataset.items) - len(pairs)
    scope = [i for i, _ in align_sessions(dataset, sessions)]
    summary["conversations"] = summarize_interactions(scope, records)
    return ConversationScoreReport(records, summary)
