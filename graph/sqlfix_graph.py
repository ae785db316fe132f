"""The SQLFixAgent graph: detect and repair wrong SQL.

load_schema → [sql_tool] → executor → sql_reviewer → (pass: done)
                                                  → query_crafter → sql_refiner → executor
                                                    → check_repair → (pass or out of attempts: done)
                                                                   → sql_refiner (reflecting)

The caller may give the SQL to check (input key `sql`, e.g. from another text-to-SQL system);
without it the SQLTool (`Context.sql_generator`, by default MAC-SQL's Decomposer) writes it.
Schema loading, the guarded executor, models, events and usage are macsql's own.

The repair memory lives in the graph's store: compile `builder` with a persistent store to keep
it across runs; without one, a process-wide `InMemoryStore` is used.
"""

from __future__ import annotations

from typing import Any, Literal, NotRequired

from langgraph.graph import END, START, StateGraph
from langgraph.runtime import Runtime

from macsql.graph.context import Context, context_of
from macsql.graph.state import MacSqlInput, MacSqlOutput, SqlState
from macsql.nodes.executor import executor_node
from macsql.nodes.sqlfix_query_crafter import query_crafter_node
from macsql.nodes.sqlfix_refiner import check_repair_node, repair_passed, sql_refiner_node
from macsql.nodes.sqlfix_reviewer import review_passed, sql_reviewer_node
from macsql.nodes.sqlfix_sql_tool import sql_tool_node, sqlfix_load_schema_node


class SqlFixInput(MacSqlInput):
    """A question and database, and optionally the SQL to check and repair."""

    sql: NotRequired[str]
    """The candidate SQL; when absent or empty the SQLTool writes it."""


class SqlFixOutput(MacSqlOutput, total=False):
    """MAC-SQL's output, plus what the review and the repair did."""

    original_sql: str
    """The SQL that was reviewed (given, or written by the SQLTool)."""
    review: dict[str, Any]
    """verdict ('pass' | 'error'), reason, source ('execution' | 'model' | 'unparsed')."""
    repaired: bool
    """True when `sql` is a repair that passed the check."""
    repair_attempts: int
    explanation: str
    """The SQLRefiner's explanation of its last choice."""


class SqlFixState(SqlFixInput, SqlFixOutput, SqlState, total=False):
    """Everything the SQLFixAgent nodes read and write."""

    refines: int
    decomposition: str
    paraphrases: list[str]
    candidates: list[dict[str, Any]]
    """Executed candidates, one per distinct result: sql, paraphrases, result preview."""
    dropped_candidates: list[dict[str, Any]]
    similar_repairs: list[dict[str, Any]]
    failure_memory: list[dict[str, Any]]
    """Failed repair attempts with the check's feedback, for the next attempt to reflect on."""
    repair_choice: int


def route_after_schema(state: SqlFixState) -> Literal["executor", "sql_tool", "__end__"]:
    if state.get("fatal"):
        return END
    return "executor" if state.get("candidate_sql") else "sql_tool"


def route_after_sql_tool(state: SqlFixState) -> Literal["executor", "sql_reviewer", "__end__"]:
    if state.get("fatal"):
        return END
    # With no SQL in the reply, the reviewer records the detected error and repair starts.
    return "executor" if state.get("candidate_sql") else "sql_reviewer"


def route_after_execution(state: SqlFixState) -> Literal["sql_reviewer", "check_repair", "__end__"]:
    if state.get("fatal"):
        return END
    return "check_repair" if state.get("repair_attempts", 0) else "sql_reviewer"


def route_after_review(
    state: SqlFixState, runtime: Runtime[Context]
) -> Literal["query_crafter", "__end__"]:
    if state.get("fatal") or review_passed(dict(state)):
        return END
    # max_repair_attempts = 0 makes SQLFixAgent a detector only: the review is the output.
    return "query_crafter" if context_of(runtime).max_repair_attempts > 0 else END


def route_after_crafter(state: SqlFixState) -> Literal["sql_refiner", "__end__"]:
    return END if state.get("fatal") else "sql_refiner"


def route_after_refiner(state: SqlFixState) -> Literal["executor", "check_repair", "__end__"]:
    if state.get("fatal"):
        return END
    return "executor" if state.get("candidate_sql") else "check_repair"


def route_after_check(
    state: SqlFixState, runtime: Runtime[Context]
) -> Literal["sql_refiner", "__end__"]:
    if state.get("fatal") or repair_passed(dict(state)):
        return END
    if state.get("repair_attempts", 0) >= context_of(runtime).max_repair_attempts:
        return END
    return "sql_refiner"


def build_sqlfix_graph() -> StateGraph[SqlFixState, Context, SqlFixInput, SqlFixOutput]:
    builder: Any = StateGraph(
        SqlFixState, context_schema=Context, input_schema=SqlFixInput, output_schema=SqlFixOutput
    )
    builder.add_node("load_schema", sqlfix_load_schema_node)
    builder.add_node("sql_tool", sql_tool_node)
    builder.add_node("executor", executor_node)
    builder.add_node("sql_reviewer", sql_reviewer_node)
    builder.add_node("query_crafter", query_crafter_node)
    builder.add_node("sql_refiner", sql_refiner_node)
    builder.add_node("check_repair", check_repair_node)
    builder.add_edge(START, "load_schema")
    builder.add_conditional_edges("load_schema", route_after_schema)
    builder.add_conditional_edges("sql_tool", route_after_sql_tool)
    builder.add_conditional_edges("executor", route_after_execution)
    builder.add_conditional_edges("sql_reviewer", route_after_review)
    builder.add_conditional_edges("query_crafter", route_after_crafter)
    builder.add_conditional_edges("sql_refiner", route_after_refiner)
    builder.add_conditional_edges("check_repair", route_after_check)
    return builder


builder = build_sqlfix_graph()
graph = builder.compile(name="sqlfix")
