"""The linking stage: value lookup in the database's value index, then column linking within the
budget. The `link_schema` node, `macsql link` and the linking benchmarks all run it."""

from __future__ import annotations

from macsql.core.context import BaseContext
from macsql.database.connection import resolve_database
from macsql.database.schema import ForeignKey, SchemaInfo
from macsql.database.value_index import ValueMatch, open_value_index
from macsql.linking.ranking import (
    LinkBudget,
    LinkResult,
    flag_values,
    link_schema,
    question_phrases,
)
from macsql.llm.embeddings import embeddings_named


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
