"""`load_schema`: check the input, open the database, build its schema representation."""

from __future__ import annotations

from langgraph.runtime import Runtime

from macsql.core.context import BaseContext, ContextError, ContextT, context_of
from macsql.core.events import emit
from macsql.core.state import PipelineState
from macsql.database.connection import (
    DatabaseNotFoundError,
    resolve_database,
    sqlite_open_hint,
)
from macsql.database.connection_errors import describe_database_error
from macsql.database.schema import load_schema
from macsql.nodes.common.contextualize import has_words, not_text, standalone_of
from macsql.prompts.schema_text import rendered_schema


def fail(message: str) -> PipelineState:
    """A terminal state update: nothing ran, and the caller is told why."""
    return {
        "fatal": True,
        "status": "failed",
        "error": message,
        "sql": "",
        "outcome": "not_run",
        "attempts": 0,
        "selector_used": False,
        "columns": [],
        "rows": [],
        "tries": [],
    }


def load_schema_node(state: PipelineState, runtime: Runtime[ContextT]) -> PipelineState:
    wrong = not_text(state)
    if wrong is not None:  # before `standalone_of`, which reads the question as text
        return fail(wrong)
    # A run without a conversation skips `contextualize`: its one output key is written here.
    return {**standalone_of(state), **_load_schema(state, runtime)}


def _load_schema(state: PipelineState, runtime: Runtime[ContextT]) -> PipelineState:
    try:
        context = context_of(runtime, BaseContext)
    except (ContextError, TypeError) as exc:
        return fail(f"invalid settings: {exc}")
    question = (state.get("question") or "").strip()
    if not question:
        return fail("the question is empty")
    if not has_words(question):  # '-', '?', '...': a model would guess
        return fail(f"the question {question[:40]!r} has no words")
    try:
        db = resolve_database(state.get("db") or "")
    except DatabaseNotFoundError as exc:
        return fail(str(exc))
    emit(runtime, "load_schema", "start", db=db.name)
    try:
        schema = load_schema(
            db,
            num_examples=context.num_value_examples,
            sample_rows=context.sample_rows,
            timeout=context.query_timeout,
        )
    except Exception as exc:  # unreachable server, corrupt file, permission denied
        hint = sqlite_open_hint(db.sqlite_path) if db.sqlite_path is not None else None
        reason = hint or describe_database_error(exc)
        return fail(f"cannot read the schema of {db.safe_url}: {reason}")
    if not schema.tables:
        return fail(f"the database {db.safe_url} has no tables")
    emit(
        runtime,
        "load_schema",
        "done",
        tables=len(schema.tables),
        columns=schema.total_columns,
        notes=schema.notes,
    )
    schema_text, foreign_keys_text = rendered_schema(schema)
    return {
        "dialect": db.dialect,
        "db_name": db.name,
        "schema": schema.state_dict,
        "schema_text": schema_text,
        "foreign_keys_text": foreign_keys_text,
        "selector_used": False,
        "selector_fallback": None,
        "attempts": 0,
        "refines": 0,
        "tries": [],
        # The keys a thread's earlier question left; `finish` sets the final ones.
        "status": "running",
        "error": None,
        "sql": "",
        "outcome": "not_run",
        "columns": [],
        "rows": [],
        "fatal": False,
    }
