"""The SQLFixAgent graph: detect and repair wrong SQL.

load_schema → [sql_tool] → executor → sql_reviewer → (pass: finish)
                                                  → query_crafter → run_candidates → sql_refiner
                                                    → executor → check_repair → (pass or out of
                                                      attempts: finish) | sql_refiner (reflecting)

With `approve_sql`, every SQL (the reviewed one, the crafted candidates, each repair) passes the
`approve` node before it runs.

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

from macsql.core.context import SqlFixContext, context_of
from macsql.core.state import SqlFixInput, SqlFixOutput, SqlFixState
from macsql.graph.routing import (
    FINISH,
    add_conversation_start,
    add_finish,
    after_loading,
    stopped,
    to_execution,
)
from macsql.nodes.common.approval import approve_node
from macsql.nodes.common.executor import executor_node
from macsql.nodes.common.link_schema import link_schema_node
from macsql.nodes.sqlfix.candidates import run_candidates_node
from macsql.nodes.sqlfix.query_crafter import query_crafter_node
from macsql.nodes.sqlfix.refiner import check_repair_node, repair_passed, sql_refiner_node
from macsql.nodes.sqlfix.reviewer import review_passed, sql_reviewer_node
from macsql.nodes.sqlfix.sql_tool import sql_tool_node, sqlfix_load_schema_node


def route_to_execution(
    state: SqlFixState, runtime: Runtime[SqlFixContext]
) -> Literal["approve", "executor", "finish"]:
    """After the schema (with SQL given to check) or the SQLRefiner wrote its fix."""
    if stopped(state):
        return FINISH
    return to_execution(context_of(runtime, SqlFixContext))


def route_after_schema(
    state: SqlFixState, runtime: Runtime[SqlFixContext]
) -> Literal["approve", "executor", "sql_tool", "finish"]:
    if stopped(state) or state.get("candidate_sql"):
        return route_to_execution(state, runtime)
    return "sql_tool"


def route_after_sql_tool(
    state: SqlFixState, runtime: Runtime[SqlFixContext]
) -> Literal["approve", "executor", "sql_reviewer", "finish"]:
    # With no SQL in the reply, the reviewer records the detected error and repair starts.
    if stopped(state) or state.get("candidate_sql"):
        return route_to_execution(state, runtime)
    return "sql_reviewer"


def route_after_approval(state: SqlFixState) -> Literal["executor", "run_candidates", "finish"]:
    """A single SQL goes to the executor; the QueryCrafter's candidates to `run_candidates`."""
    if stopped(state):
        return FINISH
    return "executor" if state.get("candidate_sql") else "run_candidates"


def route_after_execution(state: SqlFixState) -> Literal["sql_reviewer", "check_repair", "finish"]:
    if stopped(state):
        return FINISH
    return "check_repair" if state.get("repair_attempts", 0) else "sql_reviewer"


def route_after_review(
    state: SqlFixState, runtime: Runtime[SqlFixContext]
) -> Literal["query_crafter", "finish"]:
    if stopped(state) or review_passed(state):
        return FINISH
    # max_repair_attempts = 0 makes SQLFixAgent a detector only: the review is the output.
    attempts = context_of(runtime, SqlFixContext).max_repair_attempts
    return "query_crafter" if attempts > 0 else FINISH


def route_after_crafter(
    state: SqlFixState, runtime: Runtime[SqlFixContext]
) -> Literal["approve", "run_candidates", "finish"]:
    if stopped(state):
        return FINISH
    if state.get("crafted") and context_of(runtime, SqlFixContext).approve_sql:
        return "approve"
    return "run_candidates"


def route_after_refiner(
    state: SqlFixState, runtime: Runtime[SqlFixContext]
) -> Literal["approve", "executor", "check_repair", "finish"]:
    if stopped(state) or state.get("candidate_sql"):
        return route_to_execution(state, runtime)
    return "check_repair"


def route_after_check(
    state: SqlFixState, runtime: Runtime[SqlFixContext]
) -> Literal["sql_refiner", "finish"]:
    if stopped(state) or repair_passed(state):
        return FINISH
    if state.get("repair_attempts", 0) >= context_of(runtime, SqlFixContext).max_repair_attempts:
        return FINISH
    return "sql_refiner"


def build_sqlfix_graph(
    *, answer: bool = True
) -> StateGraph[SqlFixState, SqlFixContext, SqlFixInput, SqlFixOutput]:
    builder: Any = StateGraph(
        SqlFixState,
        context_schema=SqlFixContext,
        input_schema=SqlFixInput,
        output_schema=SqlFixOutput,
    )
    builder.add_node("load_schema", sqlfix_load_schema_node)
    builder.add_node("link_schema", link_schema_node)
    builder.add_node("sql_tool", sql_tool_node)
    builder.add_node("approve", approve_node)
    builder.add_node("executor", executor_node)
    builder.add_node("sql_reviewer", sql_reviewer_node)
    builder.add_node("query_crafter", query_crafter_node)
    builder.add_node("run_candidates", run_candidates_node)
    builder.add_node("sql_refiner", sql_refiner_node)
    builder.add_node("check_repair", check_repair_node)
    add_conversation_start(builder, "load_schema")
    builder.add_conditional_edges("load_schema", after_loading)
    builder.add_conditional_edges("link_schema", route_after_schema)
    builder.add_conditional_edges("sql_tool", route_after_sql_tool)
    builder.add_conditional_edges("approve", route_after_approval)
    builder.add_conditional_edges("executor", route_after_execution)
    builder.add_conditional_edges("sql_reviewer", route_after_review)
    builder.add_conditional_edges("query_crafter", route_after_crafter)
    builder.add_edge("run_candidates", "sql_refiner")
    builder.add_conditional_edges("sql_refiner", route_after_refiner)
    builder.add_conditional_edges("check_repair", route_after_check)
    add_finish(builder, answer=answer)
    return builder


builder = build_sqlfix_graph()
graph = builder.compile(name="sqlfix")
