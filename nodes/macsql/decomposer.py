"""`decomposer`: MAC-SQL's Decomposer writes SQL by chain-of-thought sub-questions."""

from __future__ import annotations

from langgraph.runtime import Runtime

from macsql.core.context import Agent, BaseContext, ContextT, context_of
from macsql.core.events import emit
from macsql.core.failures import NO_SQL_MESSAGE, model_failure
from macsql.core.state import PipelineState
from macsql.nodes.common.approval import awaiting_approval
from macsql.prompts import render_prompt
from macsql.prompts.inputs import prompt_inputs
from macsql.replies.agents import write_sql


def decomposer_node(state: PipelineState, runtime: Runtime[ContextT]) -> PipelineState:
    context = context_of(runtime, BaseContext)
    template = "decomposer_spider" if context.dataset_style == "spider" else "decomposer_bird"
    emit(runtime, Agent.DECOMPOSER, "start", style=context.dataset_style)
    written = write_sql(
        runtime,
        context,
        Agent.DECOMPOSER,
        render_prompt(template, **prompt_inputs(state, context)),
        dialect=state.get("dialect", "sqlite"),
    )
    if written.error is not None:
        emit(runtime, Agent.DECOMPOSER, "error", error=written.error)
        return {
            **model_failure(written.error),
            "usage": written.usage,
            "error": written.error,
            "fallbacks": written.fallbacks,
        }
    emit(runtime, Agent.DECOMPOSER, "done", sql=written.sql)
    update: PipelineState = {
        "usage": written.usage,
        "decomposition": written.text,
        "fallbacks": written.fallbacks,
        **written.candidate(),
    }
    if written.sql is None:
        update["last_execution"] = written.no_sql_record()
        update["error"] = NO_SQL_MESSAGE
    return awaiting_approval(update, context)
