"""The typed state of the MAC-SQL graph, with the narrow input and output a host sees.

`MacSqlInput` and `MacSqlOutput` are the graph's `input_schema` and `output_schema`: a parent
graph that embeds macsql sends the first and gets back only the second, so no internal key
(schema text, candidate SQL, counters) leaks into it.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, NotRequired

# pydantic (and so the LangGraph server's schemas) needs typing_extensions' TypedDict on 3.11.
from typing_extensions import TypedDict

Usage = dict[str, dict[str, float]]
"""Per agent: calls, input_tokens, output_tokens, latency_s."""


def merge_usage(left: Usage | None, right: Usage | None) -> Usage:
    """State reducer: add per-agent counters."""
    merged: Usage = {agent: dict(entry) for agent, entry in (left or {}).items()}
    for agent, entry in (right or {}).items():
        into = merged.setdefault(agent, {})
        for name, value in entry.items():
            into[name] = round(into.get(name, 0) + value, 6)
    return merged


class MacSqlInput(TypedDict):
    """What a caller gives: a question, optional evidence, and a database."""

    question: str
    db: str
    """A SQLite file path or an SQLAlchemy URL."""
    evidence: NotRequired[str]
    """Hints such as 'A11 refers to average salary' (BIRD's external knowledge)."""


class MacSqlOutput(TypedDict, total=False):
    """What a caller gets back. `sql` is always a query that was executed, or ''."""

    sql: str
    status: Literal["ok", "failed"]
    """'ok' when `sql` ran without error; 'failed' otherwise."""
    outcome: str
    """The classification of `sql`'s execution (ok, empty_result, syntax_error, ...)."""
    error: str | None
    columns: list[str]
    rows: list[list[Any]]
    """The result preview, at most `Context.max_rows` rows."""
    truncated: bool
    attempts: int
    """How many SQL executions the run made."""
    selector_used: bool
    selector_fallback: str | None
    """Why the Selector's reply was not applied as given, when it was not."""
    usage: Annotated[Usage, merge_usage]
    """Per agent: calls, input and output tokens, latency."""


class SqlState(TypedDict, total=False):
    """The working keys every pipeline's executor shares."""

    dialect: str
    db_name: str
    schema: dict[str, Any]
    """The full schema (SchemaInfo.to_dict()); the source of truth for selection."""
    schema_text: str
    """The schema as the agents see it (after the Selector, when it ran)."""
    foreign_keys_text: str
    candidate_sql: str
    """The SQL waiting to be executed; '' when the last reply held none."""
    last_execution: dict[str, Any]
    tries: list[dict[str, Any]]
    """Each execution: sql, outcome, error. Replaced, never appended by a reducer."""
    fatal: bool
    """Set when the run cannot go on (bad input, model unreachable)."""
    model_error: str


class MacSqlState(MacSqlInput, MacSqlOutput, SqlState, total=False):
    """Everything the MAC-SQL agents read and write."""

    selected_tables: list[str]
    decomposition: str
    refines: int
