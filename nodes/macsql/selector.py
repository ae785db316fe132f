"""`selector`: MAC-SQL's Selector prunes a large schema to the tables and columns that matter."""

from __future__ import annotations

from langgraph.runtime import Runtime

from macsql.core.context import Agent, MacSqlContext, context_of
from macsql.core.events import emit
from macsql.core.records import Fallback
from macsql.core.state import MacSqlState
from macsql.database.schema import SchemaInfo
from macsql.linking.selection import apply_selection
from macsql.llm.agent_calls import call_agent
from macsql.llm.traces import annotate_call
from macsql.prompts import render_prompt
from macsql.prompts.inputs import prompt_inputs
from macsql.prompts.schema_text import render_foreign_keys, render_schema
from macsql.replies.agents import reply_fallbacks, unreadable
from macsql.replies.schemas import SelectorAnswer
from macsql.replies.selection import read_selection, selection_of


def selector_node(state: MacSqlState, runtime: Runtime[MacSqlContext]) -> MacSqlState:
    update = _select(state, runtime)
    # A trace keeps what the Selector's reply did: the tables kept, or why it was not applied.
    applied = "schema_text" in update
    annotate_call(
        Agent.SELECTOR,
        kept_tables=update.get("selected_tables"),
        fallback=None if applied else update.get("selector_fallback"),
    )
    return update


def _select(state: MacSqlState, runtime: Runtime[MacSqlContext]) -> MacSqlState:
    context = context_of(runtime, MacSqlContext)
    schema = SchemaInfo.from_dict(state["schema"])
    emit(runtime, Agent.SELECTOR, "start", tables=len(schema.tables), columns=schema.total_columns)
    reply = call_agent(
        context,
        Agent.SELECTOR,
        render_prompt("selector", **prompt_inputs(state, context)),
        schema=SelectorAnswer,
    )
    fallbacks: list[Fallback] = reply_fallbacks(runtime, Agent.SELECTOR, reply)
    update: MacSqlState = {"selector_used": True, "usage": reply.usage}
    if reply.failed:
        fallback = f"selector model failed, full schema kept: {reply.error}"
    else:
        # The structured answer, or the reply's text: its JSON value or a map written as text.
        if reply.structured is not None:
            selection, unread = selection_of(reply.structured, schema)
        else:
            selection, unread = read_selection(reply.text, schema)
        if selection is None:
            fallback = "; ".join(unread) + ", full schema kept"
        else:
            matched = (state.get("linking") or {}).get("values") or []
            pinned = [(m["table"], m["column"]) for m in matched]
            result = apply_selection(schema, selection, pinned)
            if result.applied:
                kept = [t.name for t in result.schema.tables]
                emit(runtime, Agent.SELECTOR, "done", selected_tables=kept, notes=result.notes)
                notes = "; ".join(result.notes) or None
                if notes:
                    fallbacks.append(unreadable(runtime, Agent.SELECTOR, notes))
                return {
                    **update,
                    "schema_text": render_schema(result.schema),
                    "foreign_keys_text": render_foreign_keys(result.schema),
                    "selected_tables": kept,
                    "selector_fallback": notes,
                    "fallbacks": fallbacks,
                }
            fallback = "; ".join(result.notes) + ", full schema kept"
    every_table = [t.name for t in schema.tables]
    fallbacks.append(unreadable(runtime, Agent.SELECTOR, fallback, selected_tables=every_table))
    return {
        **update,
        "selector_fallback": fallback,
        "selected_tables": every_table,
        "fallbacks": fallbacks,
    }


def needs_selector(state: MacSqlState, context: MacSqlContext) -> bool:
    """MAC-SQL's rule: prune only schemas with many columns per table or in total."""
    tables = state.get("schema", {}).get("tables", [])
    total = sum(len(t["columns"]) for t in tables)
    average = total / len(tables) if tables else 0.0
    return average > context.selector_max_avg_columns or total > context.selector_max_total_columns
