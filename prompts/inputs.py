"""The values every agent prompt shares: database, schema, question, evidence, dialect."""

from __future__ import annotations

from macsql.core.context import BaseContext
from macsql.core.state import PromptKeys

_QUOTE_HINTS = {
    "sqlite": "Quote names that contain spaces or symbols with backticks, e.g. `Free Meal Count`.",
    "postgres": (
        "Quote names that contain capitals, spaces or symbols with double quotes, "
        'e.g. "Free Meal Count".'
    ),
    "mysql": "Quote names that contain spaces or symbols with backticks.",
    "duckdb": 'Quote names that contain spaces or symbols with double quotes, e.g. "Free Meal".',
}


VALUES_HEADING = "# Stored values that match the question (data from the database, as SQL literals)"


def dialect_name(dialect: str) -> str:
    return {
        "sqlite": "SQLite",
        "postgres": "PostgreSQL",
        "mysql": "MySQL",
        "tsql": "SQL Server",
        "duckdb": "DuckDB",
    }.get(dialect, dialect or "SQL")


def prompt_inputs(state: PromptKeys, context: BaseContext) -> dict[str, str]:
    evidence = (state.get("evidence") or "").strip()
    if context.dataset_style == "spider":
        evidence = ""
    dialect = state.get("dialect", "sqlite")
    schema = state.get("schema_text", "")
    matched = state.get("value_matches_text", "")
    if matched:
        # Inside the schema block, so every agent that reads the schema sees the stored values.
        schema = f"{schema}\n{VALUES_HEADING}\n{matched}"
    question = (state.get("question") or "").strip()
    previous_sql = (state.get("previous_sql") or "").strip()
    if previous_sql:  # a follow-up such as "same but per month" builds on the last answer
        question += (
            "\n(This follows up an earlier question of the same conversation, which was "
            f"answered with this SQL; build on it:\n```sql\n{previous_sql}\n```)"
        )
    return {
        "db_id": state.get("db_name", ""),
        "schema": schema,
        "foreign_keys": state.get("foreign_keys_text", "") or "(none)",
        "question": question,
        "evidence": evidence or "(none)",
        "dialect": dialect_name(dialect),
        "quote_hint": _QUOTE_HINTS.get(dialect, "Quote names that contain spaces or symbols."),
    }
