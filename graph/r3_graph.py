"""The R^3 graph (Review, Rebuttal, Revision): a SQL writer and reviewers who loop to consensus.

load_schema → kshot → writer → executor ⇄ writer_debug      (execution errors, ≤ max_debug_turns)
                               executor → persona → reviewer ×n (parallel, Send) → writer_revise
                               writer_revise → executor (revised SQL) | done (consensus)

Each round ends with the writer revising or rebutting; when it stands by the SQL it was reviewed
on (same SQL after sqlglot normalisation), that is consensus and the run ends. Otherwise the
revised SQL is executed and reviewed again, at most `max_review_turns` rounds in all; the last
revision is always executed before the run ends. With `approve_sql`, each SQL passes the
`approve` node before it runs. Schema loading, the guarded executor, models,
events and usage are macsql's own.
"""

from __future__ import annotations

from typing import Any, Literal

from langgraph.graph import StateGraph
from langgraph.runtime import Runtime
from langgraph.types import Send

from macsql.core.context import R3Context, context_of
from macsql.core.state import MacSqlInput, PipelineState, R3Output, R3State
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
from macsql.nodes.common.executor import executor_node
from macsql.nodes.common.link_schema import link_schema_node
from macsql.nodes.common.load_schema import load_schema_node
from macsql.nodes.r3.kshot import kshot_node
from macsql.nodes.r3.reviewers import persona_node, review_sends, reviewer_node
from macsql.nodes.r3.writer import writer_debug_node, writer_node, writer_revise_node
from macsql.prompts.results import ran


def route_after_linking(state: R3State) -> Literal["kshot", "finish"]:
    return FINISH if stopped(state) else "kshot"


def route_written(
    state: R3State, runtime: Runtime[R3Context]
) -> Literal["approve", "executor", "writer_debug", "finish"]:
    """After the writer wrote or debugged: execute its SQL; a reply without SQL is debugged."""
    if stopped(state):
        return FINISH
    context = context_of(runtime, R3Context)
    if state.get("candidate_sql"):
        return to_execution(context)
    return "writer_debug" if state.get("debug_turns", 0) < context.max_debug_turns else FINISH


def route_after_execution(
    state: R3State, runtime: Runtime[R3Context]
) -> Literal["writer_debug", "persona", "finish"] | list[Send]:
    if stopped(state):
        return FINISH
    context = context_of(runtime, R3Context)
    if not ran(state.get("last_execution")) and state.get("debug_turns", 0) < (
        context.max_debug_turns
    ):
        return "writer_debug"
    if state.get("review_turns", 0) >= context.max_review_turns:
        return FINISH
    if not state.get("personas"):
        return "persona"
    return review_sends(state)


def route_after_persona(state: R3State) -> Literal["finish"] | list[Send]:
    return FINISH if stopped(state) else review_sends(state)


def route_after_revise(
    state: R3State, runtime: Runtime[R3Context]
) -> Literal["approve", "executor", "finish"]:
    if stopped(state) or state.get("consensus") or not state.get("candidate_sql"):
        return FINISH
    return to_execution(context_of(runtime, R3Context))


def build_r3_graph(*, answer: bool = True) -> StateGraph[R3State, R3Context, MacSqlInput, R3Output]:
    builder: Any = StateGraph(
        R3State, context_schema=R3Context, input_schema=MacSqlInput, output_schema=R3Output
    )
    # Each node chooses its next hop as it returns (`add_routed_node`).
    add_routed_node(builder, "load_schema", load_schema_node, after_loading)
    add_routed_node(builder, "link_schema", link_schema_node, route_after_linking)
    builder.add_node("kshot", kshot_node)
    add_routed_node(builder, "writer", writer_node, route_written)
    # The approval node also serves SQLFixAgent, whose state its type names; here it reads
    # only the shared keys, and naming them keeps SQLFixAgent's out of this graph's channels.
    add_routed_node(builder, "approve", approve_node, after_approval, input_schema=PipelineState)
    add_routed_node(
        builder,
        "executor",
        executor_node,
        route_after_execution,
        destinations=["writer_debug", "persona", "reviewer", FINISH],
    )
    add_routed_node(builder, "writer_debug", writer_debug_node, route_written)
    add_routed_node(
        builder, "persona", persona_node, route_after_persona, destinations=["reviewer", FINISH]
    )
    builder.add_node("reviewer", reviewer_node)
    add_routed_node(builder, "writer_revise", writer_revise_node, route_after_revise)
    add_conversation_start(builder, "load_schema")
    builder.add_edge("kshot", "writer")
    builder.add_edge("reviewer", "writer_revise")
    add_finish(builder, answer=answer)
    return builder


builder = build_r3_graph()
graph = builder.compile(name="r3")
