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
from macsql.database.schema import ForeignKey, SchemaInfo, load_schema
from macsql.database.value_index import ValueMatch, open_value_index
from macsql.linking.ranking import (
    LinkBudget,
    LinkResult,
    flag_values,
    link_schema,
    question_phrases,
    render_value_matches,
)
from macsql.llm.embeddings import embeddings_named
from macsql.prompts.schema_text import render_foreign_keys, render_schema


def run_linking(
    schema: SchemaInfo, db: str, question: str, evidence: str, context: BaseContext
) -> LinkResult:
    """Value lookup then column linking, as the node and `macsql link` run them."""
    notes: list[str] = []
    matches: list[ValueMatch] = []
    inferred: list[ForeignKey] = []
    if context.link_max_values > 0:
        try:
            index = open_value_index(
                resolve_database(db),
                schema,
                rows_per_table=context.link_index_rows_per_table,
                values_per_column=context.link_index_values_per_column,
                max_values=context.link_index_max_values,
                timeout=context.query_timeout,
            )
            matches = index.lookup(question_phrases(question, evidence))
            matches += flag_values(index.small_columns(), question, evidence)
            inferred = index.joins()
        except Exception as exc:  # an unreadable table must not stop the question
            notes.append(f"value index unavailable: {type(exc).__name__}: {exc}")
    budget = LinkBudget(
        max_chars=context.link_max_schema_chars,
        max_columns=context.link_max_columns,
        max_values=context.link_max_values,
    )
    name = context.link_embeddings or ""
    embeddings = None
    if name:
        try:
            embeddings = embeddings_named(name)
        except Exception as exc:  # a missing extra or an unreachable server: lexical only
            notes.append(f"embeddings {name!r} unavailable: {type(exc).__name__}: {exc}")
    try:
        result = link_schema(
            schema,
            question,
            evidence,
            budget,
            matches,
            embeddings,
            inferred=inferred,
            embeddings_name=name,
        )
    except Exception as exc:
        if embeddings is None:
            raise
        notes.append(f"embeddings {name!r} failed: {type(exc).__name__}: {exc}")
        result = link_schema(schema, question, evidence, budget, matches, inferred=inferred)
    result.notes = notes + result.notes
    return result


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
