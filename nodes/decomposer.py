"""`decomposer`: MAC-SQL's Decomposer writes SQL by chain-of-thought sub-questions."""

from __future__ import annotations

from langgraph.runtime import Runtime

from macsql.graph.context import Agent, BaseContext, ContextT, context_of
from macsql.graph.state import PipelineState
from macsql.nodes.approval import awaiting_approval
from macsql.nodes.events import emit
from macsql.nodes.failures import NO_SQL_MESSAGE, model_failure, no_sql_execution
from macsql.nodes.model_calls import call_agent
from macsql.nodes.prompt_inputs import prompt_inputs
from macsql.nodes.replies import extract_sql
from macsql.prompts import render_prompt


def decomposer_node(state: PipelineState, runtime: Runtime[ContextT]) -> PipelineState:
    context = context_of(runtime, BaseContext)
    template = "decomposer_spider" if context.dataset_style == "spider" else "decomposer_bird"
    emit(runtime, Agent.DECOMPOSER, "start", style=context.dataset_style)
    reply = call_agent(
        context, Agent.DECOMPOSER, render_prompt(template, **prompt_inputs(state, context))
    )
    if reply.failed:
        emit(runtime, Agent.DECOMPOSER, "error", error=reply.error)
        return {**model_failure(reply.error or ""), "usage": reply.usage, "error": reply.error}
    sql = extract_sql(reply.text)
    emit(runtime, Agent.DECOMPOSER, "done", sql=sql)
    update: PipelineState = {
        "usage": reply.usage,
        "decomposition": reply.text,
        "candidate_sql": sql or "",
    }
    if sql is None:
        update["last_execution"] = no_sql_execution(reply.text)
        update["error"] = NO_SQL_MESSAGE
    return awaiting_approval(update, context)
