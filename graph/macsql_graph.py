"""The MAC-SQL graph: load_schema → link_schema → [selector] → decomposer → executor ⇄ refiner.

Like every pipeline it starts with `contextualize` when there is a conversation (a follow-up
question made standalone) and ends through `finish` (then `answer`, with `Context.answer`); with
`approve_sql`, each SQL passes the `approve` node before the executor runs it
(`macsql.graph.routing`).

`builder` is the uncompiled StateGraph, for hosts that compile with their own checkpointer or
store; `graph` is compiled without one, for LangGraph Studio and the server (which supply
persistence themselves).
"""

from __future__ import annotations

from typing import Any, Literal

from langgraph.graph import StateGraph
from langgraph.runtime import Runtime

from macsql.core.context import MacSqlContext, context_of
from macsql.core.state import MacSqlInput, MacSqlOutput, MacSqlState, PipelineState
from macsql.graph.routed_nodes import add_routed_node
from macsql.graph.routing import (
    FINISH,
    add_conversation_start,
    add_finish,
    after_approval,
    after_loading,
    stopped,
    to_execution,
)
from macsql.nodes.common.approval import approve_node
from macsql.nodes.common.executor import execution_passed, executor_node
from macsql.nodes.common.link_schema import link_schema_node
from macsql.nodes.common.load_schema import load_schema_node
from macsql.nodes.macsql.decomposer import decomposer_node
from macsql.nodes.macsql.refiner import refiner_node
from macsql.nodes.macsql.selector import needs_selector, selector_node


def can_refine(state: MacSqlState, context: MacSqlContext) -> bool:
    """MAC-SQL's bound: the Decomposer's SQL and the Refiner's make at most `max_try_times`
    tries, a reply with no SQL counting as one."""
    return 1 + state.get("refines", 0) < context.max_try_times


def route_after_linking(
    state: MacSqlState, runtime: Runtime[MacSqlContext]
) -> Literal["selector", "decomposer", "finish"]:
    if stopped(state):
        return FINISH
    return "selector" if needs_selector(state, context_of(runtime, MacSqlContext)) else "decomposer"


def route_candidate(
    state: MacSqlState, runtime: Runtime[MacSqlContext]
) -> Literal["approve", "executor", "refiner", "finish"]:
    """After a model wrote (or failed to write) SQL; a reply with no SQL goes to the Refiner."""
    if stopped(state):
        return FINISH
    context = context_of(runtime, MacSqlContext)
    if state.get("candidate_sql"):
        return to_execution(context)
    return "refiner" if can_refine(state, context) else FINISH


def route_after_execution(
    state: MacSqlState, runtime: Runtime[MacSqlContext]
) -> Literal["refiner", "finish"]:
    if stopped(state) or execution_passed(state):
        return FINISH
    return "refiner" if can_refine(state, context_of(runtime, MacSqlContext)) else FINISH


def build_macsql_graph(
    *, answer: bool = True
) -> StateGraph[MacSqlState, MacSqlContext, MacSqlInput, MacSqlOutput]:
    builder: Any = StateGraph(
        MacSqlState,
        context_schema=MacSqlContext,
        input_schema=MacSqlInput,
        output_schema=MacSqlOutput,
    )
    # Every hop but the Selector's is chosen by the node as it returns (`add_routed_node`: no
    # router step over a copy of the state). The Selector skip stays a conditional edge.
    add_routed_node(builder, "load_schema", load_schema_node, after_loading)
    builder.add_node("link_schema", link_schema_node)
    builder.add_node("selector", selector_node)
    add_routed_node(builder, "decomposer", decomposer_node, route_candidate)
    # The approval node also serves SQLFixAgent, whose state its type names; here it reads
    # only the shared keys, and naming them keeps SQLFixAgent's out of this graph's channels.
    add_routed_node(builder, "approve", approve_node, after_approval, input_schema=PipelineState)
    add_routed_node(builder, "executor", executor_node, route_after_execution)
    add_routed_node(builder, "refiner", refiner_node, route_candidate)
    add_conversation_start(builder, "load_schema")
    builder.add_conditional_edges("link_schema", route_after_linking)
    builder.add_edge("selector", "decomposer")
    add_finish(builder, answer=answer)
    return builder


builder = build_macsql_graph()
graph = builder.compile(name="macsql")
