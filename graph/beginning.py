"""A first step that only some runs take: `contextualize`, when there is a conversation.

`start_through_contextualize(builder, first)` adds the `contextualize` node between START and
`first` (the node every run starts with otherwise). A run with a conversation (history, or a
checkpointed thread that a later question will read) goes through it; a single question goes
straight to `first`, whose update then holds the one key `contextualize` would have set
(`macsql.nodes.common.contextualize.standalone_of`). Both ways end in the same output.
"""

# No `from __future__ import annotations`: LangGraph reads the router's parameter types at run
# time to decide whether to pass it `config`.

from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.graph import START

from macsql.nodes.common.contextualize import contextualize_node, has_conversation

CONTEXTUALIZE = "contextualize"


def start_through_contextualize(builder: Any, first: str) -> Any:
    """`builder` with START going to `contextualize` (then `first`) or to `first` directly."""

    def to_contextualize(state: Any, config: RunnableConfig) -> str:
        on_thread = bool((config.get("configurable") or {}).get("thread_id"))
        return CONTEXTUALIZE if has_conversation(state, on_thread) else first

    to_contextualize.__name__ = f"contextualize_or_{first}"
    builder.add_node(CONTEXTUALIZE, contextualize_node)
    builder.add_conditional_edges(
        START, to_contextualize, {CONTEXTUALIZE: CONTEXTUALIZE, first: first}
    )
    builder.add_edge(CONTEXTUALIZE, first)
    return builder
