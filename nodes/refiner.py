"""`refiner`: MAC-SQL's Refiner repairs SQL from the database's execution feedback."""

from __future__ import annotations

from langgraph.runtime import Runtime

from macsql.graph.context import Agent, MacSqlContext, context_of
from macsql.graph.state import MacSqlState
from macsql.nodes.events import emit
from macsql.nodes.failures import NO_SQL_MESSAGE, model_failure, no_sql_execution
from macsql.nodes.model_calls import call_agent
from macsql.nodes.prompt_inputs import prompt_inputs
from macsql.nodes.quoting import shown_message
from macsql.nodes.replies import extract_sql
from macsql.prompts import render_prompt


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
        error=shown_message(failed.get("error")),
    )
    reply = call_agent(context, Agent.REFINER, prompt)
    if reply.failed:
        emit(runtime, Agent.REFINER, "error", error=reply.error)
        stopped: MacSqlState = {**model_failure(reply.error or ""), "usage": reply.usage}
        stopped["refines"] = refines
        if state.get("status") != "ok":  # an earlier SQL that ran stays the answer
            stopped["error"] = reply.error
        return stopped
    sql = extract_sql(reply.text)
    emit(runtime, Agent.REFINER, "done", attempt=refines, sql=sql)
    update: MacSqlState = {"usage": reply.usage, "refines": refines, "candidate_sql": sql or ""}
    if sql is None:
        update["last_execution"] = {**no_sql_execution(reply.text), "sql": failed.get("sql", "")}
        if not state.get("tries"):
            update["error"] = NO_SQL_MESSAGE
    return update
