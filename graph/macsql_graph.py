"""The MAC-SQL graph: load_schema → link_schema → [selector] → decomposer → executor ⇄ refiner.

Like every pipeline it starts with `contextualize` when there is a conversation (a follow-up
question made standalone, see `macsql.nodes.conversation` and `graph.beginning`) and, with
`Context.answer`, ends with `answer` (`graph.ending`).

`builder` is the uncompiled StateGraph, for hosts that compile with their own checkpointer or
store; `graph` is compiled without one, for LangGraph Studio and the server (which supply
persistence themselves).
"""

from __future__ import annotations

from typing import Any, Literal

from langgraph.graph import StateGraph
from langgraph.runtime import Runtime

from macsql.graph.beginning import start_through_contextualize
from macsql.graph.context import MacSqlContext, context_of
from macsql.graph.ending import with_endings
from macsql.graph.routing import to_linking, unless_fatal
from macsql.graph.state import MacSqlInput, MacSqlOutput, MacSqlState
from macsql.nodes.decomposer import decomposer_node
from macsql.nodes.executor import execution_passed, executor_node
from macsql.nodes.refiner import refiner_node
from macsql.nodes.schema_linker import link_schema_node
from macsql.nodes.schema_loader import load_schema_node
from macsql.nodes.selector import needs_selector, selector_node


@unless_fatal
def route_after_schema(
    state: MacSqlState, runtime: Runtime[MacSqlContext]
) -> Literal["selector", "decomposer", "__end__"]:
    return "selector" if needs_selector(state, context_of(runtime, MacSqlContext)) else "decomposer"


@unless_fatal
def route_candidate(
    state: MacSqlState, runtime: Runtime[MacSqlContext]
) -> Literal["executor", "refiner", "__end__"]:
    """After a model wrote (or failed to write) SQL."""
    if state.get("candidate_sql"):
        return "executor"
    # A reply with no SQL is an error for the Refiner, within the same bound.
    max_try_times = context_of(runtime, MacSqlContext).max_try_times
    return "refiner" if state.get("refines", 0) < max_try_times else "__end__"


@unless_fatal
def route_after_execution(
    state: MacSqlState, runtime: Runtime[MacSqlContext]
) -> Literal["refiner", "__end__"]:
    max_try_times = context_of(runtime, MacSqlContext).max_try_times
    if execution_passed(state) or state.get("attempts", 0) >= max_try_times:
        return "__end__"
    return "refiner" if state.get("refines", 0) < max_try_times else "__end__"


def build_macsql_graph() -> StateGraph[MacSqlState, MacSqlContext, MacSqlInput, MacSqlOutput]:
    builder: Any = StateGraph(
        MacSqlState,
        context_schema=MacSqlContext,
        input_schema=MacSqlInput,
        output_schema=MacSqlOutput,
    )
    builder.add_node("load_schema", load_schema_node)
    builder.add_node("link_schema", link_schema_node)
    builder.add_node("selector", selector_node)
    builder.add_node("decomposer", decomposer_node)
    builder.add_node("executor", executor_node)
    builder.add_node("refiner", refiner_node)
    start_through_contextualize(builder, "load_schema")
    builder.add_conditional_edges("load_schema", to_linking)
    builder.add_conditional_edges("link_schema", route_after_schema)
    builder.add_edge("selector", "decomposer")
    builder.add_conditional_edges("decomposer", route_candidate)
    builder.add_conditional_edges("executor", route_after_execution)
    builder.add_conditional_edges("refiner", route_candidate)
    return builder


builder = with_endings(build_macsql_graph())
graph = builder.compile(name="macsql")
