"""`approve`: a person approves, edits or rejects each SQL before it runs (`approve_sql`).

With `approve_sql` on, every route that hands SQL to the database goes through this node first:
the executor's candidate, and SQLFixAgent's crafted candidates. It pauses once per statement
(`interrupt`, in order) and does nothing else, so that resuming it repeats no model call and runs
no query. The writers mark their update `paused` (`awaiting_approval`), so a paused run does not
read as a failed one in Studio or in `invoke`'s result.

Each pause's value is `{"action": "approve_sql", "sql", "attempt", "hint"}`; resume with `True`
(run it), a new SQL string or `{"sql": ...}` (run that instead), or `False` (reject it).
"""

from __future__ import annotations

from typing import Any, TypeVar

from langgraph.runtime import Runtime
from langgraph.types import interrupt

from macsql.core.context import BaseContext, ContextT
from macsql.core.events import emit
from macsql.core.records import CraftedSql, DroppedCandidate
from macsql.core.state import PipelineState, SqlFixState

StateT = TypeVar("StateT", bound=PipelineState)

REJECTED = "the SQL was rejected by the reviewer"
_HINT = (
    "resume with True to run it, a new SQL string (or {'sql': ...}) to run that instead, "
    "or False to stop"
)


def awaiting_approval(update: StateT, context: BaseContext) -> StateT:
    """`update`, marked `paused` when the SQL it hands on goes to a person before it runs."""
    pending = update.get("candidate_sql") or update.get("crafted")
    if context.approve_sql and pending:
        update["status"] = "paused"
        update["error"] = None
    return update


def decide(sql: str, attempt: int) -> str | None:
    """Pause for a person: the SQL to run (theirs, or the one shown), or None when rejected."""
    decision: Any = interrupt(
        {"action": "approve_sql", "sql": sql, "attempt": attempt, "hint": _HINT}
    )
    if decision is True or decision is None:
        return sql
    if isinstance(decision, str):
        return decision.strip() or sql
    if isinstance(decision, dict):
        if decision.get("approve") is False or decision.get("reject"):
            return None
        return str(decision.get("sql") or sql)
    return None


def approve_node(state: SqlFixState, runtime: Runtime[ContextT]) -> SqlFixState:
    attempt = state.get("attempts", 0) + 1
    crafted = state.get("crafted") or []
    if crafted:
        return _approve_crafted(state, crafted, attempt, runtime)
    sql = state.get("candidate_sql") or ""
    approved = decide(sql, attempt)
    if approved is None:
        emit(runtime, "approve", "rejected", attempt=attempt, sql=sql)
        tries = state.get("tries") or []
        # A SQL that ran earlier stays the answer; the pending one never ran.
        return {"fatal": True, "error": REJECTED, "candidate_sql": "", "tries": tries}
    emit(runtime, "approve", "approved", attempt=attempt, sql=approved, edited=approved != sql)
    return {"candidate_sql": approved, "status": "running"}


def _approve_crafted(
    state: SqlFixState, crafted: list[CraftedSql], attempt: int, runtime: Runtime[ContextT]
) -> SqlFixState:
    kept: list[CraftedSql] = []
    dropped: list[DroppedCandidate] = list(state.get("dropped_candidates") or [])
    for item in crafted:
        approved = decide(item["sql"], attempt)
        if approved is None:
            dropped.append({"question": item["question"], "sql": item["sql"], "reason": REJECTED})
            continue
        kept.append({"question": item["question"], "sql": approved})
    emit(runtime, "approve", "approved", attempt=attempt, kept=len(kept), asked=len(crafted))
    return {"crafted": kept, "dropped_candidates": dropped, "status": "running"}
