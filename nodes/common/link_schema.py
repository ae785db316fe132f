"""`link_schema`: the linking stage every pipeline runs after `load_schema`.

It matches the question's phrases to stored values (the database's value index, built on first
use) and, when the schema is over the link budget, cuts it to the best-matching columns before
any agent reads it: the Selector, the Decomposer and every writer then see only the linked
schema. The state's `linking` says which route ran and why, and what was kept.
"""

from __future__ import annotations

from langgraph.runtime import Runtime

from macsql.core.context import BaseContext, ContextT, context_of
from macsql.core.events import emit
from macsql.core.state import PipelineState
from macsql.database.connection import resolve_database
from macsql.database.schema import load_schema
from macsql.linking.ranking import render_value_matches
from macsql.linking.stage import run_linking
from macsql.prompts.schema_text import render_foreign_keys, render_schema


def link_schema_node(state: PipelineState, runtime: Runtime[ContextT]) -> PipelineState:
    context = context_of(runtime, BaseContext)
    if not context.schema_linking:
        return {
            "linking": {"route": "off", "reason": "schema_linking is off"},
            "value_matches_text": "",
        }
    db = state.get("db") or ""
    schema = load_schema(
        resolve_database(db),
        num_examples=context.num_value_examples,
        sample_rows=context.sample_rows,
        timeout=context.query_timeout,
    )
    evidence = "" if context.dataset_style == "spider" else (state.get("evidence") or "")
    emit(runtime, "link_schema", "start", columns=schema.total_columns)
    result = run_linking(schema, db, state.get("question") or "", evidence, context)
    summary = result.summary()
    emit(runtime, "link_schema", "done", **summary)
    update: PipelineState = {
        "linking": summary,
        "value_matches_text": render_value_matches(result.values, schema.dialect),
    }
    if result.route == "linked":
        update["schema"] = result.schema.to_dict()
        update["schema_text"] = render_schema(result.schema)
        update["foreign_keys_text"] = render_foreign_keys(result.schema)
    return update
