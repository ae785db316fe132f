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

from typing import Annotated, Any, Literal

from langgraph.graph import END, START, StateGraph
from langgraph.runtime import Runtime
from langgraph.types import Send

from macsql.graph.context import Context, context_of
from macsql.graph.state import MacSqlInput, MacSqlOutput, SqlState
from macsql.nodes.execution_records import ran
from macsql.nodes.executor import executor_node
from macsql.nodes.r3_kshot import kshot_node
from macsql.nodes.r3_reviewers import persona_node, review_sends, reviewer_node
from macsql.nodes.r3_writer import writer_debug_node, writer_node, writer_revise_node
from macsql.nodes.schema_loader import load_schema_node


def add_reviews(
    left: list[dict[str, Any]] | None, right: list[dict[str, Any]] | None
) -> list[dict[str, Any]]:
    """Reviews written in parallel add up; `None` (from the writer's first turn) clears them, so
    a thread that asks a second question starts with no reviews."""
    if right is None:
        return []
    return [*(left or []), *right]


class R3Output(MacSqlOutput, total=False):
    """MAC-SQL's output, plus how the discussion went."""

    consensus: bool
    """True when the writer stood by the reviewed SQL; False when the rounds ran out."""
    review_turns: int
    debug_turns: int
    personas: list[str]
    """The reviewers' generated professions."""


class R3State(MacSqlInput, R3Output, SqlState, total=False):
    """Everything the R^3 nodes read and write."""

    refines: int
    few_shots: list[dict[str, str]]
    few_shot_error: str | None
    history: list[dict[str, str]]
    """The writer's dialogue H: {'role': 'user' | 'assistant', 'content': ...}."""
    history_dropped: int
    persona_fallback: str | None
    reviews: Annotated[list[dict[str, Any]], add_reviews]
    """Every review of this question's rounds (round, index, persona, comment)."""


def route_after_schema(state: R3State) -> Literal["kshot", "__end__"]:
    return END if state.get("fatal") else "kshot"


def route_written(
    state: R3State, runtime: Runtime[Context]
) -> Literal["executor", "writer_debug", "__end__"]:
    """After the writer wrote or debugged: execute its SQL; a reply without SQL is debugged."""
    if state.get("fatal"):
        return END
    if state.get("candidate_sql"):
        return "executor"
    if state.get("debug_turns", 0) < context_of(runtime).max_debug_turns:
        return "writer_debug"
    return END


def route_after_execution(
    state: R3State, runtime: Runtime[Context]
) -> Literal["writer_debug", "persona", "__end__"] | list[Send]:
    context = context_of(runtime)
    if state.get("fatal"):
        return END
    if not ran(state.get("last_execution")) and state.get("debug_turns", 0) < (
        context.max_debug_turns
    ):
        return "writer_debug"
    if state.get("review_turns", 0) >= context.max_review_turns:
        return END
    if not state.get("personas"):
        return "persona"
    return review_sends(dict(state))


def route_after_persona(state: R3State) -> Literal["__end__"] | list[Send]:
    return END if state.get("fatal") else review_sends(dict(state))


def route_after_revise(state: R3State) -> Literal["executor", "__end__"]:
    if state.get("fatal") or state.get("consensus") or not state.get("candidate_sql"):
        return END
    return "executor"


def build_r3_graph() -> StateGraph[R3State, Context, MacSqlInput, R3Output]:
    builder: Any = StateGraph(
        R3State, context_schema=Context, input_schema=MacSqlInput, output_schema=R3Output
    )
    builder.add_node("load_schema", load_schema_node)
    builder.add_node("kshot", kshot_node)
    builder.add_node("writer", writer_node)
    builder.add_node("executor", executor_node)
    builder.add_node("writer_debug", writer_debug_node)
    builder.add_node("persona", persona_node)
    builder.add_node("reviewer", reviewer_node)
    builder.add_node("writer_revise", writer_revise_node)
    builder.add_edge(START, "load_schema")
    builder.add_conditional_edges("load_schema", route_after_schema)
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


builder = build_r3_graph()
graph = builder.compile(name="r3")
