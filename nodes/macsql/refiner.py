"""`refiner`: MAC-SQL's Refiner repairs SQL from the database's execution feedback."""

from __future__ import annotations

from langgraph.runtime import Runtime

from macsql.core.context import Agent, MacSqlContext, context_of
from macsql.core.events import emit
from macsql.core.failures import NO_SQL_MESSAGE, model_failure
from macsql.core.state import MacSqlState
from macsql.nodes.common.approval import awaiting_approval
from macsql.prompts import render_prompt
from macsql.prompts.inputs import prompt_inputs
from macsql.prompts.results import prompt_error
from macsql.replies.agents import write_sql


def refiner_node(state: MacSqlState, runtime: Runtime[MacSqlContext]) -> MacSqlState:
    context = context_of(runtime, MacSqlContext)
    failed = state.get("last_execution") or {}
    refines = state.get("refines", 0) + 1
    emit(runtime, Agent.REFINER, "start", attempt=refines, outcome=failed.get("outcome"))
    prompt = render_prompt(
        "refiner",
        **prompt_inputs(state, context),
        sql=failed.get("sql") or "(no SQL was written)",
        outcome=failed.get("outcome", "unknown"),
        error_class=failed.get("error_class") or "none",
        error=prompt_error(failed, cells=context.send_rows_to_model),
    )
    written = write_sql(
        runtime, context, Agent.REFINER, prompt, dialect=state.get("dialect", "sqlite")
    )
    if written.error is not None:
        emit(runtime, Agent.REFINER, "error", error=written.error)
        stopped: MacSqlState = {
            **model_failure(written.error),
            "usage": written.usage,
            "fallbacks": written.fallbacks,
        }
        stopped["refines"] = refines
        if state.get("status") != "ok":  # an earlier SQL that ran stays the answer
            stopped["error"] = written.error
        return stopped
    emit(runtime, Agent.REFINER, "done", attempt=refines, sql=written.sql)
    update: MacSqlState = {
        "usage": written.usage,
        "refines": refines,
        "fallbacks": written.fallbacks,
        **written.candidate(),
    }
    if written.sql is None:
        update["last_execution"] = {**written.no_sql_record(), "sql": failed.get("sql", "")}
        if not state.get("tries"):
            update["error"] = NO_SQL_MESSAGE
    return awaiting_approval(update, context)
