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

from typing import Any, Literal

from langgraph.graph import StateGraph
from langgraph.runtime import Runtime

from macsql.graph.beginning import start_through_contextualize
from macsql.graph.context import SqlFixContext, context_of
from macsql.graph.ending import with_endings
from macsql.graph.routing import to_linking, unless_fatal
from macsql.graph.state import SqlFixInput, SqlFixOutput, SqlFixState
from macsql.nodes.executor import executor_node
from macsql.nodes.schema_linker import link_schema_node
from macsql.nodes.sqlfix_query_crafter import query_crafter_node
from macsql.nodes.sqlfix_refiner import check_repair_node, repair_passed, sql_refiner_node
from macsql.nodes.sqlfix_reviewer import review_passed, sql_reviewer_node
from macsql.nodes.sqlfix_sql_tool import sql_tool_node, sqlfix_load_schema_node


@unless_fatal
def route_after_schema(state: SqlFixState) -> Literal["executor", "sql_tool", "__end__"]:
    return "executor" if state.get("candidate_sql") else "sql_tool"


@unless_fatal
def route_after_sql_tool(state: SqlFixState) -> Literal["executor", "sql_reviewer", "__end__"]:
    # With no SQL in the reply, the reviewer records the detected error and repair starts.
    return "executor" if state.get("candidate_sql") else "sql_reviewer"


@unless_fatal
def route_after_execution(state: SqlFixState) -> Literal["sql_reviewer", "check_repair", "__end__"]:
    return "check_repair" if state.get("repair_attempts", 0) else "sql_reviewer"


@unless_fatal
def route_after_review(
    state: SqlFixState, runtime: Runtime[SqlFixContext]
) -> Literal["query_crafter", "__end__"]:
    if review_passed(state):
        return "__end__"
    # max_repair_attempts = 0 makes SQLFixAgent a detector only: the review is the output.
    attempts = context_of(runtime, SqlFixContext).max_repair_attempts
    return "query_crafter" if attempts > 0 else "__end__"


@unless_fatal
def route_after_crafter(state: SqlFixState) -> Literal["sql_refiner", "__end__"]:
    return "sql_refiner"


@unless_fatal
def route_after_refiner(state: SqlFixState) -> Literal["executor", "check_repair", "__end__"]:
    return "executor" if state.get("candidate_sql") else "check_repair"


@unless_fatal
def route_after_check(
    state: SqlFixState, runtime: Runtime[SqlFixContext]
) -> Literal["sql_refiner", "__end__"]:
    if repair_passed(state):
        return "__end__"
    if state.get("repair_attempts", 0) >= context_of(runtime, SqlFixContext).max_repair_attempts:
        return "__end__"
    return "sql_refiner"


def build_sqlfix_graph() -> StateGraph[SqlFixState, SqlFixContext, SqlFixInput, SqlFixOutput]:
    builder: Any = StateGraph(
        SqlFixState,
        context_schema=SqlFixContext,
        input_schema=SqlFixInput,
        output_schema=SqlFixOutput,
    )
    builder.add_node("load_schema", sqlfix_load_schema_node)
    builder.add_node("link_schema", link_schema_node)
    builder.add_node("sql_tool", sql_tool_node)
    builder.add_node("executor", executor_node)
    builder.add_node("sql_reviewer", sql_reviewer_node)
    builder.add_node("query_crafter", query_crafter_node)
    builder.add_node("sql_refiner", sql_refiner_node)
    builder.add_node("check_repair", check_repair_node)
    start_through_contextualize(builder, "load_schema")
    builder.add_conditional_edges("load_schema", to_linking)
    builder.add_conditional_edges("link_schema", route_after_schema)
    builder.add_conditional_edges("sql_tool", route_after_sql_tool)
    builder.add_conditional_edges("executor", route_after_execution)
    builder.add_conditional_edges("sql_reviewer", route_after_review)
    builder.add_conditional_edges("query_crafter", route_after_crafter)
    builder.add_conditional_edges("sql_refiner", route_after_refiner)
    builder.add_conditional_edges("check_repair", route_after_check)
    return builder


builder = with_endings(build_sqlfix_graph())
graph = builder.compile(name="sqlfix")
