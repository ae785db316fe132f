"""`decomposer`: MAC-SQL's Decomposer writes SQL by chain-of-thought sub-questions."""

from __future__ import annotations

from typing import Any

from langgraph.runtime import Runtime

from macsql.graph.context import Context, context_of
from macsql.llm.calls import call_model
from macsql.nodes.events import emit
from macsql.nodes.prompt_inputs import prompt_inputs
from macsql.nodes.replies import extract_sql
from macsql.prompts import render_prompt

NO_SQL_MESSAGE = "the model's reply contained no ```sql block"


def no_sql_execution(reply_text: str) -> dict[str, Any]:
    """An execution record for a reply without SQL, so the Refiner sees it as an error."""
    excerpt = " ".join(reply_text.split())[:300]
    return {
        "sql": "",
        "outcome": "no_sql",
        "columns": [],
        "rows": [],
        "row_count": 0,
        "error": f"{NO_SQL_MESSAGE}; it said: {excerpt!r}",
        "error_class": "NoSQL",
    }


def model_failure(message: str) -> dict[str, Any]:
    """The run stops: the model cannot be reached. What was executed so far is kept."""
    return {"fatal": True, "model_error": message}


def decomposer_node(state: dict[str, Any], runtime: Runtime[Context]) -> dict[str, Any]:
    context = context_of(runtime)
    template = "decomposer_spider" if context.dataset_style == "spider" else "decomposer_bird"
    emit(runtime, "decomposer", "start", style=context.dataset_style)
    reply = call_model(
        context, "decomposer", render_prompt(template, **prompt_inputs(state, context))
    )
    if reply.failed:
        emit(runtime, "decomposer", "error", error=reply.error)
        return {**model_failure(reply.error or ""), "usage": reply.usage, "error": reply.error}
    sql = extract_sql(reply.text)
    emit(runtime, "decomposer", "done", sql=sql)
    update: dict[str, Any] = {
        "usage": reply.usage,
        "decomposition": reply.text,
        "candidate_sql": sql or "",
    }
    if sql is None:
        update["last_execution"] = no_sql_execution(reply.text)
        update["error"] = NO_SQL_MESSAGE
    return update
