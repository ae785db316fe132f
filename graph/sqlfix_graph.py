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
from macsql.graph.routed_nodes import add_routed_node
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
from macsql.nodes.sqlfix.sql_tool import (
    sql_tool_node,
    sqlfix_load_approved_schema_node,
    sqlfix_load_schema_node,
)


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


def route_after_approved_schema(
    state: SqlFixState, runtime: Runtime[SqlFixContext]
) -> Literal["executor", "sql_tool", "finish"]:
    """`route_after_schema` when the given SQL was approved already: it runs as it is."""
    if stopped(state):
        return FINISH
    return "executor" if state.get("candidate_sql") else "sql_tool"


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
    *, answer: bool = True, given_sql_approved: bool = False
) -> StateGraph[SqlFixState, SqlFixContext, SqlFixInput, SqlFixOutput]:
    """`given_sql_approved`: the input `sql` was approved by a person already (a stage after one
    that ran it under `approve_sql`), so it runs without a pause; its repairs still pause."""
    builder: Any = StateGraph(
        SqlFixState,
        context_schema=SqlFixContext,
        input_schema=SqlFixInput,
        output_schema=SqlFixOutput,
    )
    # Each node chooses its next hop as it returns (`add_routed_node`).
    if given_sql_approved:
        add_routed_node(builder, "load_schema", sqlfix_load_approved_schema_node, after_loading)
        add_routed_node(builder, "link_schema", link_schema_node, route_after_approved_schema)
    else:
        add_routed_node(builder, "load_schema", sqlfix_load_schema_node, after_loading)
        add_routed_node(builder, "link_schema", link_schema_node, route_after_schema)
    add_routed_node(builder, "sql_tool", sql_tool_node, route_after_sql_tool)
    add_routed_node(builder, "approve", approve_node, route_after_approval)
    add_routed_node(builder, "executor", executor_node, route_after_execution)
    add_routed_node(builder, "sql_reviewer", sql_reviewer_node, route_after_review)
    add_routed_node(builder, "query_crafter", query_crafter_node, route_after_crafter)
    builder.add_node("run_candidates", run_candidates_node)
    add_routed_node(builder, "sql_refiner", sql_refiner_node, route_after_refiner)
    add_routed_node(builder, "check_repair", check_repair_node, route_after_check)
    add_conversation_start(builder, "load_schema")
    builder.add_edge("run_candidates", "sql_refiner")
    add_finish(builder, answer=answer)
    return builder


builder = build_sqlfix_graph()
graph = builder.compile(name="sqlfix")
