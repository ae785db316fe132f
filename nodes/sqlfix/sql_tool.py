"""SQLFixAgent's SQLTool (the SQL generator) and the graph's entry node.

The SQLTool writes the first SQL when the caller gave none, and one candidate per paraphrase for
the QueryCrafter. `Context.sql_generator` chooses it: `"decomposer"` reuses MAC-SQL's Decomposer
node as it is (prompt, model, events, usage); any other value names a chat model that gets a
plain text-to-SQL prompt, the way the paper plugs in a fine-tuned text-to-SQL model.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from langgraph.runtime import Runtime

from macsql.core.context import Agent, SqlFixContext, context_of
from macsql.core.events import emit
from macsql.core.failures import NO_SQL_MESSAGE, model_failure, no_sql_execution
from macsql.core.records import ExecutionRecord, Fallback, Usage
from macsql.core.state import SqlFixState
from macsql.nodes.common.approval import awaiting_approval
from macsql.nodes.common.load_schema import load_schema_node
from macsql.nodes.macsql.decomposer import decomposer_node
from macsql.prompts import render_prompt
from macsql.prompts.inputs import prompt_inputs
from macsql.replies.agents import write_sql

DECOMPOSER = "decomposer"
SQL_TOOL_AGENT = Agent.SQL_TOOL


@dataclass
class GeneratedSql:
    """One SQLTool answer: the SQL (None when the reply held none), the reply, the usage."""

    sql: str | None
    text: str
    usage: Usage
    error: str | None = None
    """Set when the model could not be reached."""
    no_sql: ExecutionRecord | None = None
    """For a reply with no SQL, the record that tells the Refiner what it held instead."""
    fallbacks: list[Fallback] = field(default_factory=list)
    finish_reason: str = ""
    reading: dict[str, Any] = field(default_factory=dict)
    """How the SQL was chosen from a reply with several queries."""


def generate_sql(
    state: SqlFixState, runtime: Runtime[SqlFixContext], question: str | None = None
) -> GeneratedSql:
    """Ask the SQLTool for a query answering `question` (default: the state's question)."""
    context = context_of(runtime, SqlFixContext)
    wording = question if question is not None else state.get("question", "")
    asked: SqlFixState = {**state, "question": wording}
    if context.sql_generator.strip().lower() == DECOMPOSER:
        update = decomposer_node(asked, runtime)
        return GeneratedSql(
            sql=update.get("candidate_sql") or None,
            text=update.get("decomposition", ""),
            usage=update.get("usage") or {},
            error=update.get("model_error") if update.get("fatal") else None,
            no_sql=update.get("last_execution"),
            fallbacks=update.get("fallbacks") or [],
            finish_reason=update.get("candidate_finish_reason", ""),
            reading=update.get("candidate_reading") or {},
        )
    emit(runtime, SQL_TOOL_AGENT, "start", model=context.sql_generator)
    written = write_sql(
        runtime,
        context,
        SQL_TOOL_AGENT,
        render_prompt("sqlfix_sql_tool", **prompt_inputs(asked, context)),
        dialect=state.get("dialect", "sqlite"),
    )
    if written.error is not None:
        emit(runtime, SQL_TOOL_AGENT, "error", error=written.error)
        return GeneratedSql(None, "", written.usage, written.error, fallbacks=written.fallbacks)
    emit(runtime, SQL_TOOL_AGENT, "done", sql=written.sql)
    return GeneratedSql(
        written.sql,
        written.text,
        written.usage,
        no_sql=written.no_sql_record() if written.sql is None else None,
        fallbacks=written.fallbacks,
        finish_reason=written.candidate().get("candidate_finish_reason", ""),
        reading=written.reading if written.sql else {},
    )


def sqlfix_load_schema_node(state: SqlFixState, runtime: Runtime[SqlFixContext]) -> SqlFixState:
    """MAC-SQL's `load_schema`, keeping the caller's SQL (input key `sql`) as the candidate."""
    return awaiting_approval(_load_given_sql(state, runtime), context_of(runtime, SqlFixContext))


def sqlfix_load_approved_schema_node(
    state: SqlFixState, runtime: Runtime[SqlFixContext]
) -> SqlFixState:
    """`sqlfix_load_schema_node` for a stage whose given SQL a person approved already (MAC-SQL +
    SQLFixAgent's, given the SQL its MAC-SQL stage ran): it runs without asking again."""
    return _load_given_sql(state, runtime)


def _load_given_sql(state: SqlFixState, runtime: Runtime[SqlFixContext]) -> SqlFixState:
    loaded = load_schema_node(state, runtime)  # first: it fails a `sql` that is not text
    if loaded.get("fatal"):
        given = state.get("sql")
        return {**loaded, "original_sql": given if isinstance(given, str) else ""}
    given = (state.get("sql") or "").strip().rstrip(";").strip()
    ready: SqlFixState = {
        **loaded,
        "original_sql": given,
        "candidate_sql": given,
        "repair_attempts": 0,
        "failure_memory": [],
        "candidates": [],
        "paraphrases": [],
        "similar_repairs": [],
        "review": {},
        "repaired": False,
        "explanation": "",
        "repair_choice": 0,
        "dropped_candidates": [],
    }
    return ready


def sql_tool_node(state: SqlFixState, runtime: Runtime[SqlFixContext]) -> SqlFixState:
    """Write the first SQL with the SQLTool, when the caller gave none."""
    generated = generate_sql(state, runtime)
    if generated.error is not None:
        return {
            **model_failure(generated.error),
            "usage": generated.usage,
            "error": generated.error,
            "fallbacks": generated.fallbacks,
        }
    update: SqlFixState = {
        "usage": generated.usage,
        "candidate_sql": generated.sql or "",
        "candidate_finish_reason": generated.finish_reason,
        "candidate_reading": generated.reading,
        "original_sql": generated.sql or "",
        "fallbacks": generated.fallbacks,
    }
    if generated.sql is None:
        update["last_execution"] = generated.no_sql or no_sql_execution(generated.text)
        update["error"] = NO_SQL_MESSAGE
    return awaiting_approval(update, context_of(runtime, SqlFixContext))
