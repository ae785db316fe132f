"""Execution records (the executor's JSON-safe results) as the agents read them."""

from __future__ import annotations

from macsql.core.records import Candidate, ExecutionRecord
from macsql.database.execution import Outcome
from macsql.prompts.error_privacy import scrub_values
from macsql.prompts.quoting import shown_cell, shown_message, shown_name

PREVIEW_ROWS = 10


def ran(record: ExecutionRecord | Candidate | None) -> bool:
    """True when the execution record is of SQL that executed (rows or not)."""
    try:
        return Outcome((record or {}).get("outcome", "")).ran
    except ValueError:
        return False


def render_result(
    record: ExecutionRecord | Candidate | None,
    max_rows: int = PREVIEW_ROWS,
    *,
    cells: bool = True,
) -> str:
    """An execution record as agents read it: a small table, or what went wrong. With `cells`
    off (`Context.send_rows_to_model`), only its shape: columns, row count and value types."""
    record = record or {}
    outcome = record.get("outcome", "not run")
    if not ran(record):
        return f"the query failed ({outcome}): {prompt_error(record, cells=cells)}"
    rows = record.get("rows") or []
    total = record.get("row_count", len(rows))
    if not rows:
        return "the query ran and returned no rows"
    columns = [shown_name(c) for c in record.get("columns") or []] or [
        f"col{i + 1}" for i in range(len(rows[0]))
    ]
    if not cells:
        return result_shape(record, columns)
    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    for row in rows[:max_rows]:
        # Cells are data: quoted and bounded, so none can break the table or give orders.
        lines.append("| " + " | ".join(shown_cell(v) for v in row) + " |")
    shown = min(len(rows), max_rows)
    more = "+" if record.get("truncated") else ""
    note = f"{total}{more} row(s)" + (f", first {shown} shown" if shown < total or more else "")
    if outcome == Outcome.NULL_RESULT:
        note += "; the result contains NULL values"
    return note + "\n" + "\n".join(lines)


def prompt_error(record: ExecutionRecord | Candidate | None, *, cells: bool = True) -> str:
    """The record's error as a prompt shows it: quoted and bounded, and with `cells` off
    (`Context.send_rows_to_model`) without the values the database quoted
    (`error_privacy.scrub_values`)."""
    record = record or {}
    error = record.get("error")
    if not cells:
        error = scrub_values(error, record.get("sql") or "", record.get("error_class"))
    return shown_message(error)


def result_shape(record: ExecutionRecord | Candidate, columns: list[str]) -> str:
    """A result without its values: row count, columns with their types, NULLs present."""
    rows = record.get("rows") or []
    more = "+" if record.get("truncated") else ""
    described = []
    for index, name in enumerate(columns):
        kinds = sorted({_kind(row[index]) for row in rows if index < len(row)} - {"NULL"})
        described.append(f"{name} ({'/'.join(kinds) or 'NULL'})")
    note = f"{record.get('row_count', len(rows))}{more} row(s); columns: " + ", ".join(described)
    if record.get("outcome") == Outcome.NULL_RESULT:
        note += "; the result contains NULL values"
    return note + " (values are not shown)"


def _kind(value: object) -> str:
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "real"
    return "text"
