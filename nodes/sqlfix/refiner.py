"""SQLFixAgent's SQLRefiner: choose the best candidate, or write a fix; check; reflect; retry.

One visit of `sql_refiner_node` is one repair attempt. The chosen SQL goes to the shared
executor, then `check_repair_node` applies the paper's check (it parses, executes and returns
rows, with MAC-SQL's result analysis). A failed attempt goes into the failure memory, which the
next attempt's prompt shows for reflection (Reflexion). `Context.max_repair_attempts` bounds it.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from langgraph.config import get_config
from langgraph.runtime import Runtime

from macsql.core.context import Agent, SqlFixContext, context_of
from macsql.core.events import emit
from macsql.core.failures import model_failure
from macsql.core.records import Candidate, ExecutionRecord, RepairFailure
from macsql.core.state import SqlFixState
from macsql.database.execution import Outcome
from macsql.memory.repairs import (
    SHARED_NAMESPACE,
    ensure_seeded,
    record_repair,
    recorded_namespace,
    retrieve_similar_repairs,
    store_of,
)
from macsql.nodes.common.approval import awaiting_approval
from macsql.nodes.common.executor import final_fields
from macsql.prompts import render_prompt
from macsql.prompts.error_privacy import scrub_values
from macsql.prompts.inputs import prompt_inputs
from macsql.prompts.results import ran, render_result
from macsql.replies.agents import WrittenSql, field_text, unreadable, write_sql
from macsql.replies.fields import read_choice
from macsql.replies.reader import extract_json_object
from macsql.replies.schemas import RepairAnswer

AGENT = Agent.SQL_REFINER


def format_repairs(repairs: list[dict[str, Any]]) -> str:
    if not repairs:
        return "(none found)"
    blocks = []
    for i, r in enumerate(repairs, 1):
        lines = [f"Repair {i}", f"Question: {r.get('question', '')}"]
        if r.get("evidence"):
            lines.append(f"Evidence: {r['evidence']}")
        lines.append(f"Wrong SQL: {r.get('wrong_sql', '')}")
        if r.get("error"):
            lines.append(f"What was wrong: {r['error']}")
        lines.append(f"Fixed SQL: {r.get('fixed_sql', '')}")
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks)


def format_candidates(candidates: list[Candidate], *, cells: bool = True) -> str:
    if not candidates:
        return (
            "(none: no candidate query executed, so write the corrected query yourself "
            "and answer with choice 0)"
        )
    blocks = []
    for i, c in enumerate(candidates, 1):
        note = " (same result as the original SQL)" if c.get("same_result_as_original") else ""
        wordings = "; ".join(c.get("paraphrases") or [])
        blocks.append(
            f"Candidate {i}{note}, written for: {wordings}\n```sql\n{c['sql']}\n```\n"
            f"Result: {render_result(c, cells=cells)}"
        )
    return "\n\n".join(blocks)


def format_failures(failures: list[RepairFailure]) -> str:
    if not failures:
        return "(none: this is the first attempt)"
    blocks = []
    for f in failures:
        lines = [f"Attempt {f['attempt']}:"]
        if f.get("sql"):
            lines.append(f"```sql\n{f['sql']}\n```")
        lines.append(f"Check failed: {f['feedback']}")
        if f.get("explanation"):
            lines.append(f"Your explanation then: {f['explanation']}")
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks)


class Choice(NamedTuple):
    sql: str | None
    number: int
    """The chosen candidate's number, or 0 for an own fix."""
    explanation: str
    named: bool
    """Whether the reply named a number at all (a fix of its own says 0)."""


def parse_choice(written: WrittenSql, candidates: list[Candidate]) -> Choice:
    """The refiner's choice as the reply gives it."""
    found = written.structured or extract_json_object(written.text, ("explanation",)) or {}
    explanation = field_text(found, "explanation")
    read = read_choice(written.text, written.structured)
    choice = read or 0
    if 1 <= choice <= len(candidates):
        return Choice(candidates[choice - 1]["sql"], choice, explanation, True)
    return Choice(written.sql, 0, explanation, read is not None)


def repair_namespace(state: SqlFixState, context: SqlFixContext) -> tuple[str, ...] | None:
    """This run's own namespace of recorded repairs (user, database, thread; see
    `sqlfix_memory.recorded_namespace`)."""
    try:
        configurable = get_config().get("configurable") or {}
    except RuntimeError:  # called outside a graph run
        configurable = {}
    user = (
        context.user_id or configurable.get("user_id") or configurable.get("langgraph_auth_user_id")
    )
    thread = configurable.get("thread_id")
    return recorded_namespace(
        context.repair_memory_scope,
        str(user) if user else None,
        state.get("db") or "",
        str(thread) if thread else None,
    )


def sql_refiner_node(state: SqlFixState, runtime: Runtime[SqlFixContext]) -> SqlFixState:
    context = context_of(runtime, SqlFixContext)
    attempt = state.get("repair_attempts", 0) + 1
    update: SqlFixState = {"repair_attempts": attempt}
    repairs = state.get("similar_repairs")
    if attempt == 1 or repairs is None:
        store = store_of(runtime)
        try:
            ensure_seeded(store, context.repair_memory_file)
            own = repair_namespace(state, context)
            repairs = retrieve_similar_repairs(
                store,
                state.get("question") or "",
                context.num_similar_repairs,
                evidence=state.get("evidence") or "",
                namespaces=(SHARED_NAMESPACE, own) if own else (SHARED_NAMESPACE,),
            )
        except Exception as exc:  # an unreadable memory file or a store error
            emit(runtime, AGENT, "memory_error", error=f"{type(exc).__name__}: {exc}")
            repairs = []
        update["similar_repairs"] = repairs
        emit(runtime, AGENT, "memory", similar=[r.get("question") for r in repairs])
    candidates = state.get("candidates") or []
    failures = state.get("failure_memory") or []
    emit(runtime, AGENT, "start", attempt=attempt, candidates=len(candidates))
    review = state.get("review") or {}
    original = state.get("original_sql") or ""
    first_try = next((t for t in state.get("tries") or [] if t.get("sql") == original), None)
    prompt = render_prompt(
        "sqlfix_refiner",
        **prompt_inputs(state, context),
        original_sql=original or "(no SQL was written)",
        original_result=(
            render_result(first_try, cells=context.send_rows_to_model)
            if first_try
            else "(not executed)"
        ),
        review_reason=review.get("reason") or "(no reason given)",
        similar_repairs=format_repairs(repairs),
        candidates=format_candidates(candidates, cells=context.send_rows_to_model),
        failure_memory=format_failures(failures),
    )
    written = write_sql(
        runtime,
        context,
        AGENT,
        prompt,
        dialect=state.get("dialect", "sqlite"),
        schema=RepairAnswer,
    )
    update["usage"] = written.usage
    if written.error is not None:
        emit(runtime, AGENT, "error", error=written.error)
        return {**update, **model_failure(written.error), "fallbacks": written.fallbacks}
    sql, choice, explanation, named = parse_choice(written, candidates)
    # A chosen candidate is an answer without SQL of its own.
    update["fallbacks"] = [f for f in written.fallbacks if choice == 0 or f["kind"] != "no_sql"]
    if candidates and sql and not named:
        # The query may be one the explanation quoted: say that no candidate was named.
        detail = "the reply named no candidate by number; the query it holds ran as its own fix"
        update["fallbacks"].append(unreadable(runtime, AGENT, detail))
    emit(runtime, AGENT, "done", attempt=attempt, choice=choice, sql=sql)
    update["candidate_sql"] = sql or ""
    update["candidate_finish_reason"] = written.candidate().get("candidate_finish_reason", "")
    update["candidate_reading"] = written.reading if choice == 0 and sql else {}
    update["repair_choice"] = choice
    update["explanation"] = explanation or written.text.strip()[:1000]
    if sql is None:
        update["last_execution"] = written.no_sql_record()
    return awaiting_approval(update, context)


def repair_check(record: ExecutionRecord, *, cells: bool = True) -> str | None:
    """None when the repair passes (it executed, analysed ok, and returned rows), else why not
    (the database's message without the values it quotes when `cells` is off)."""
    outcome = record.get("outcome")
    if outcome == Outcome.OK and record.get("row_count", len(record.get("rows") or [])) > 0:
        return None
    if outcome == Outcome.OK:
        return "the query ran but returned no rows"
    error = record.get("error")
    if not cells:
        error = scrub_values(error, record.get("sql") or "", record.get("error_class"))
    return f"{outcome}: {error or 'no message'}"


def check_repair_node(state: SqlFixState, runtime: Runtime[SqlFixContext]) -> SqlFixState:
    """Judge the attempt just executed; remember a failure, or settle on a passing repair."""
    context = context_of(runtime, SqlFixContext)
    record = state.get("last_execution") or {}
    attempt = state.get("repair_attempts", 0)
    feedback = repair_check(record, cells=context.send_rows_to_model)
    if feedback is None:
        emit(runtime, AGENT, "passed", attempt=attempt, sql=record.get("sql"))
        if context.record_repairs and state.get("original_sql"):
            record_repair(
                store_of(runtime),
                {
                    "question": state.get("question"),
                    "evidence": state.get("evidence") or "",
                    "db_id": state.get("db_name", ""),
                    "wrong_sql": state["original_sql"],
                    "fixed_sql": record["sql"],
                    "error": (state.get("review") or {}).get("reason", ""),
                },
                repair_namespace(state, context),
            )
        return {"repaired": True, **final_fields([record])}
    failure: RepairFailure = {
        "attempt": attempt,
        "sql": record.get("sql") or "",
        "feedback": feedback,
        "explanation": state.get("explanation") or "",
    }
    emit(runtime, AGENT, "failed_check", attempt=attempt, feedback=feedback)
    update: SqlFixState = {"failure_memory": [*(state.get("failure_memory") or []), failure]}
    # Until a repair passes, the answer is the original SQL when it ran (the reviewer may have
    # been wrong), else the best execution so far.
    tries = state.get("tries") or []
    original = next((t for t in tries if t.get("sql") == state.get("original_sql")), None)
    if original is not None and ran(original):
        update.update(final_fields([original]))
    elif tries:
        update.update(final_fields(tries))
    return update


def repair_passed(state: SqlFixState) -> bool:
    return bool(state.get("repaired"))
