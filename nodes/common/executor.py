"""`executor`: run the candidate SQL safely, classify the outcome, keep the best attempt.

`execute_and_analyse` is the one way model-written SQL reaches a database: the guard and the
bounds of `execute_sql`, then MAC-SQL's analysis. Every node that runs such SQL calls it, after
the `approve` node when `approve_sql` is on.
"""

from __future__ import annotations

from typing import Any

from langgraph.runtime import Runtime

from macsql.core.context import BaseContext, ContextT, context_of
from macsql.core.events import emit
from macsql.core.records import ExecutionRecord
from macsql.core.state import PipelineState
from macsql.database.connection import DatabaseNotFoundError, resolve_database
from macsql.database.execution import Outcome, execute_sql
from macsql.database.statement_limits import statement_limits
from macsql.llm.traces import record_execution

# Lower is better when choosing which executed SQL to return.
_RANK = {Outcome.OK: 0, Outcome.NULL_RESULT: 1, Outcome.EMPTY_RESULT: 1}


def analyse(outcome: Outcome, rows: list[Any], style: str) -> Outcome:
    """MAC-SQL's check: in BIRD style an empty result or any NULL cell also needs a refine."""
    if outcome != Outcome.OK or style != "bird":
        return outcome
    if not rows:
        return Outcome.EMPTY_RESULT
    if any(value is None for row in rows for value in row):
        return Outcome.NULL_RESULT
    return outcome


_ANALYSIS_MESSAGES = {
    Outcome.EMPTY_RESULT: "the query ran but returned no rows",
    Outcome.NULL_RESULT: "the query ran but its result contains NULL values; "
    "consider a JOIN or IS NOT NULL",
}


def execute_and_analyse(db: str, sql: str, context: BaseContext) -> ExecutionRecord:
    """Execute `sql` on `db` under the context's bounds; a JSON-safe execution record (also
    added to the trace being recorded, after the call that wrote the SQL)."""
    record = _execute_and_analyse(db, sql, context)
    record_execution(record)
    return record


def _execute_and_analyse(db: str, sql: str, context: BaseContext) -> ExecutionRecord:
    try:
        ref = resolve_database(db)
    except DatabaseNotFoundError as exc:
        return {
            "sql": sql,
            "outcome": str(Outcome.DATABASE_ERROR),
            "columns": [],
            "rows": [],
            "row_count": 0,
            "error": str(exc),
            "error_class": type(exc).__name__,
        }
    result = execute_sql(
        ref,
        sql,
        timeout=context.query_timeout,
        max_rows=context.max_rows,
        max_bytes=context.max_result_bytes,
        allowed_functions=context.allowed_functions,
        allowed_relations=context.allowed_relations,
        limits=statement_limits(context),
    )
    result.outcome = analyse(result.outcome, result.rows, context.dataset_style)
    record = result.to_state(max_cell_chars=context.max_cell_chars)
    if result.outcome in _ANALYSIS_MESSAGES:
        record["error"] = _ANALYSIS_MESSAGES[result.outcome]
        record["error_class"] = "ResultCheck"
    return record


def best_try(tries: list[ExecutionRecord]) -> ExecutionRecord:
    """The attempt to return: a passing one, else one that ran, else the last; latest wins ties."""

    def rank(item: tuple[int, ExecutionRecord]) -> tuple[int, int]:
        index, attempt = item
        return (_RANK.get(Outcome(attempt["outcome"]), 2), -index)

    return min(enumerate(tries), key=rank)[1]


def final_fields(tries: list[ExecutionRecord]) -> PipelineState:
    """The output keys, from the best executed attempt."""
    best = best_try(tries)
    ran = Outcome(best["outcome"]).ran
    return {
        "sql": best["sql"],
        "status": "ok" if ran else "failed",
        "outcome": best["outcome"],
        "error": None if best["outcome"] == Outcome.OK else best.get("error"),
        "columns": best.get("columns", []),
        "rows": best.get("rows", []),
        "truncated": best.get("truncated", False),
    }


def executor_node(state: PipelineState, runtime: Runtime[ContextT]) -> PipelineState:
    context = context_of(runtime, BaseContext)
    attempt = state.get("attempts", 0) + 1
    sql = state.get("candidate_sql", "")
    emit(runtime, "executor", "start", attempt=attempt, sql=sql)
    record = execute_and_analyse(state["db"], sql, context)
    if state.get("candidate_finish_reason") == "length":
        record["finish_reason"] = "length"
    if state.get("candidate_reading"):
        record["reply_reading"] = state.get("candidate_reading") or {}
    # The tries keep what the output needs of each execution, not its timing.
    tried = record.copy()
    tried.pop("elapsed", None)
    tries = [*state.get("tries", []), tried]
    emit(
        runtime,
        "executor",
        "done",
        attempt=attempt,
        outcome=record["outcome"],
        error=record.get("error"),
        row_count=record.get("row_count", 0),
    )
    return {
        "attempts": attempt,
        "last_execution": record,
        "tries": tries,
        "candidate_sql": "",
        "candidate_finish_reason": "",
        "candidate_reading": {},
        **final_fields(tries),
    }


def execution_passed(state: PipelineState) -> bool:
    return (state.get("last_execution") or {}).get("outcome") == Outcome.OK
