"""`run_candidates`: run the QueryCrafter's candidates and keep one per distinct result.

Candidates that do not execute are dropped, and candidates with the same result are kept once,
so the SQLRefiner chooses between different answers. Each runs through `execute_and_analyse`,
the executor's own path (the guard, the bounds, the trace).
"""

from __future__ import annotations

import json

from langgraph.runtime import Runtime

from macsql.core.context import Agent, SqlFixContext, context_of
from macsql.core.events import emit
from macsql.core.records import Candidate, DroppedCandidate, ExecutionRecord
from macsql.core.state import SqlFixState
from macsql.nodes.common.executor import execute_and_analyse
from macsql.prompts.results import PREVIEW_ROWS, ran


def result_key(record: ExecutionRecord) -> str:
    """Results compare by their rows in order (column names aside): an ORDER BY can be the very
    difference the question cares about, so two orders of the same rows stay two candidates."""
    rows = record.get("rows") or []
    return json.dumps([record.get("row_count", len(rows)), rows], default=str)


def run_candidates_node(state: SqlFixState, runtime: Runtime[SqlFixContext]) -> SqlFixState:
    context = context_of(runtime, SqlFixContext)
    crafted = state.get("crafted") or []
    emit(runtime, Agent.QUERY_CRAFTER, "run", candidates=len(crafted))
    original = state.get("last_execution") or {}
    original_key = result_key(original) if ran(original) else None
    candidates: list[Candidate] = []
    dropped: list[DroppedCandidate] = list(state.get("dropped_candidates") or [])
    seen: dict[str, int] = {}
    for item in crafted:
        record = execute_and_analyse(state["db"], item["sql"], context)
        if not ran(record):
            dropped.append({**item, "reason": record.get("error") or ""})
            continue
        key = result_key(record)
        if key in seen:
            candidates[seen[key]]["paraphrases"].append(item["question"])
            continue
        seen[key] = len(candidates)
        candidates.append(
            {
                "sql": item["sql"],
                "paraphrases": [item["question"]],
                "outcome": record["outcome"],
                "columns": record.get("columns", []),
                "rows": (record.get("rows") or [])[:PREVIEW_ROWS],
                "row_count": record.get("row_count", 0),
                "truncated": record.get("truncated", False),
                "error": record.get("error"),
                "same_result_as_original": key == original_key,
            }
        )
    emit(
        runtime,
        Agent.QUERY_CRAFTER,
        "ran",
        candidates=[c["sql"] for c in candidates],
        dropped=len(dropped),
    )
    return {"crafted": [], "candidates": candidates, "dropped_candidates": dropped}
