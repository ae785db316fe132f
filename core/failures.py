"""State updates for the ways an agent's turn can fail, shared by every pipeline's nodes."""

from __future__ import annotations

from macsql.core.records import ExecutionRecord
from macsql.core.state import PipelineState

NO_SQL_MESSAGE = "the model's reply held no SQL query"


def no_sql_execution(reply_text: str, found: str = "") -> ExecutionRecord:
    """An execution record for a reply without SQL, so the Refiner sees it as an error, with
    what the reply held instead."""
    excerpt = " ".join(reply_text.split())[:300]
    instead = f"; it held {found}" if found and not found.startswith("only prose") else ""
    return {
        "sql": "",
        "outcome": "no_sql",
        "columns": [],
        "rows": [],
        "row_count": 0,
        "error": f"{NO_SQL_MESSAGE}{instead}; it said: {excerpt!r}",
        "error_class": "NoSQL",
    }


def model_failure(message: str) -> PipelineState:
    """The run stops: the model cannot be reached. What was executed so far is kept."""
    return {"fatal": True, "model_error": message}
