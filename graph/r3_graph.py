"""The R^3 graph (Review, Rebuttal, Revision): a SQL writer and reviewers who loop to consensus.

load_schema → kshot → writer → executor ⇄ writer_debug      (execution errors, ≤ max_debug_turns)
                               executor → persona → reviewer ×n (parallel, Send) → writer_revise
                               writer_revise → executor (revised SQL) | done (consensus)

Each round ends with the writer revising or rebutting; when it stands by the SQL it was reviewed
on (same SQL after sqlglot normalisation), that is consensus and the run ends. Otherwise the
revised SQL is executed and reviewed again, at most `max_review_turns` rounds in all; the last
revision is always executed before the run ends. Schema loading, the guarded executor, models,
events and usage are macsql's own.
"""

from __future__ import annotations

from typing import Any, Literal

from langgraph.graph import END, StateGraph
from langgraph.runtime import Runtime
from langgraph.types import Send

from macsql.graph.beginning import start_through_contextualize
from macsql.graph.context import R3Context, context_of
from macsql.graph.ending import with_endings
from macsql.graph.routing import to_linking, unless_fatal
from macsql.graph.state import MacSqlInput, R3Output, R3State
from macsql.nodes.execution_records import ran
from macsql.nodes.executor import executor_node
from macsql.nodes.r3_kshot import kshot_node
from macsql.nodes.r3_reviewers import persona_node, review_sends, reviewer_node
from macsql.nodes.r3_writer import writer_debug_node, writer_node, writer_revise_node
from macsql.nodes.schema_linker import link_schema_node
from macsql.nodes.schema_loader import load_schema_node


@unless_fatal
def route_after_schema(state: R3State) -> Literal["kshot", "__end__"]:
    return "kshot"


@unless_fatal
def route_written(
    state: R3State, runtime: Runtime[R3Context]
) -> Literal["executor", "writer_debug", "__end__"]:
    """After the writer wrote or debugged: execute its SQL; a reply without SQL is debugged."""
    if state.get("candidate_sql"):
        return "executor"
    if state.get("debug_turns", 0) < context_of(runtime, R3Context).max_debug_turns:
        return "writer_debug"
    return "__end__"


@unless_fatal
def route_after_execution(
    state: R3State, runtime: Runtime[R3Context]
) -> Literal["writer_debug", "persona", "__end__"] | list[Send]:
    context = context_of(runtime, R3Context)
    if not ran(state.get("last_execution")) and state.get("debug_turns", 0) < (
        context.max_debug_turns
    ):
        return "writer_debug"
    if state.get("review_turns", 0) >= context.max_review_turns:
        return "__end__"
    if not state.get("personas"):
        return "persona"
    return review_sends(state)


@unless_fatal
def route_after_persona(state: R3State) -> Literal["__end__"] | list[Send]:
    return review_sends(state)


@unless_fatal
def route_after_revise(state: R3State) -> Literal["executor", "__end__"]:
    if state.get("consensus") or not state.get("candidate_sql"):
        return "__end__"
    return "executor"


def build_r3_graph() -> StateGraph[R3State, R3Context, MacSqlInput, R3Output]:
    builder: Any = StateGraph(
        R3State, context_schema=R3Context, input_schema=MacSqlInput, output_schema=R3Output
    )
    builder.add_node("load_schema", load_schema_node)
    builder.add_node("link_schema", link_schema_node)
    builder.add_node("kshot", kshot_node)
    builder.add_node("writer", writer_node)
    builder.add_node("executor", executor_node)
    builder.add_node("writer_debug", writer_debug_node)
    builder.add_node("persona", persona_node)
    builder.add_node("reviewer", reviewer_node)
    builder.add_node("writer_revise", writer_revise_node)
    start_through_contextualize(builder, "load_schema")
    builder.add_conditional_edges("load_schema", to_linking)
    builder.add_conditional_edges("link_schema", route_after_schema)
    builder.add_edge("kshot", "writer")
    builder.add_conditional_edges("writer", route_written)
    builder.add_conditional_edges("writer_debug", route_written)
    builder.add_conditional_edges(
        "executor", route_after_execution, ["writer_debug", "persona", "reviewer", END]
    )
    builder.add_conditional_edges("persona", route_after_persona, ["reviewer", END])
    builder.add_edge("reviewer", "writer_revise")
    builder.add_conditional_edges("writer_revise", route_after_revise)
    return builder


builder = with_endings(build_r3_graph())
graph = builder.compile(name="r3")
