"""The routes every pipeline shares: how a run starts, how it reaches SQL execution, how it ends.

A node that cannot go on (bad input, the model unreachable, a rejected SQL) sets `fatal` in
the state. Every router reads it first, through `stopped`, and sends the run to `finish`, the
one node every run ends through; `finish` goes on to `answer` when `Context.answer` is on, and a
run on a conversation thread ends with `close_turn` (what the thread keeps of the turn).
"""

# No `from __future__ import annotations`: LangGraph reads the routers' parameter types at run
# time to decide whether to pass them `config` and `runtime`.

from collections.abc import Callable
from typing import Any, Final, Literal

from langchain_core.runnables import RunnableConfig
from langgraph.graph import END, START
from langgraph.runtime import Runtime

from macsql.core.context import BaseContext, context_of
from macsql.graph.routed_nodes import add_routed_node
from macsql.nodes.common.answer import answer_node, answer_wanted
from macsql.nodes.common.close_turn import close_turn_node, closes_turn, working_keys
from macsql.nodes.common.contextualize import contextualize_node, has_conversation
from macsql.nodes.common.finish import finish_node

CONTEXTUALIZE: Final = "contextualize"
FINISH: Final = "finish"
CLOSE_TURN: Final = "close_turn"


def stopped(state: Any) -> bool:
    """True when a node marked the run `fatal`: its router then returns `FINISH`."""
    return bool(state.get("fatal"))


def starts_with(first: str) -> Callable[[Any, RunnableConfig], str]:
    """START's router: `contextualize` when there is a conversation (history, or a thread a later
    question will read), else straight to `first`, which then writes the standalone question."""

    def route(state: Any, config: RunnableConfig) -> str:
        on_thread = bool((config.get("configurable") or {}).get("thread_id"))
        return CONTEXTUALIZE if has_conversation(state, on_thread) else first

    route.__name__ = f"contextualize_or_{first}"
    return route


def after_loading(state: Any) -> Literal["link_schema", "finish"]:
    """After `load_schema`: the linking stage, which every pipeline runs."""
    return FINISH if stopped(state) else "link_schema"


def to_execution(context: BaseContext) -> Literal["approve", "executor"]:
    """Where SQL goes to run: through a person first when `approve_sql` is on."""
    return "approve" if context.approve_sql else "executor"


def after_approval(state: Any) -> Literal["executor", "finish"]:
    """After `approve`: the approved (or edited) SQL runs; a rejected one ends the run."""
    return FINISH if stopped(state) else "executor"


def after_finish(
    state: Any, runtime: Runtime[BaseContext]
) -> Literal["answer", "close_turn", "__end__"]:
    """After `finish`: an answer in words when `Context.answer` is on, then the thread's turn."""
    if answer_wanted(state, context_of(runtime, BaseContext)):
        return "answer"
    return after_answer(state)


def after_answer(state: Any) -> Literal["close_turn", "__end__"]:
    """A run on a conversation thread (`contextualize` opened its turn) closes the turn."""
    return CLOSE_TURN if closes_turn(state) else "__end__"


def add_conversation_start(builder: Any, first: str) -> None:
    """START → [contextualize] → `first`: the beginning every pipeline shares."""
    builder.add_node(CONTEXTUALIZE, contextualize_node)
    builder.add_conditional_edges(START, starts_with(first), [CONTEXTUALIZE, first])
    builder.add_edge(CONTEXTUALIZE, first)


def add_finish(builder: Any, *, answer: bool = True) -> None:
    """`finish` → [answer] → [close_turn] → END: the end every pipeline shares. A pipeline
    embedded as a stage of another (MAC-SQL + SQLFixAgent) leaves both to the outer graph."""
    if not answer:
        builder.add_node(FINISH, finish_node)
        builder.add_edge(FINISH, END)
        return
    add_routed_node(builder, FINISH, finish_node, after_finish)
    add_routed_node(builder, "answer", answer_node, after_answer)
    builder.add_node(CLOSE_TURN, close_turn_node(working_keys(builder)))
    builder.add_edge(CLOSE_TURN, END)
