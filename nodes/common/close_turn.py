"""What a conversation thread keeps of each turn, and `close_turn`, a thread run's last step.

A thread keeps what the next turn needs: its turns (question, standalone question, SQL and
outcome; at most `history_turns` earlier ones and the current one), the caller's input and the
run's output keys. Not result rows: the `rows` channel is never checkpointed unless
`Context.thread_rows` asks for it (`graph.state.ResultRows`), and `close_turn` empties every
working key (schema text, executions with their rows, candidates, dialogues) once the turn is
answered, so that what a thread stores does not grow with the turns or the results.

A turn is recorded when it starts (`open_turn`, by `contextualize`), as failed until `close_turn`
writes how it ended. A run that dies in between (a crash, a timeout, Ctrl-C) thus stays in the
thread as failed, and the next turn's rewriter is told so, never that it went well.
"""

from __future__ import annotations

import types
import typing
from collections.abc import Callable, Mapping
from typing import Any, get_args, get_origin

from langchain_core.messages import AnyMessage, HumanMessage, RemoveMessage
from langchain_core.runnables import RunnableConfig
from langgraph.runtime import Runtime
from langgraph.types import Overwrite

from macsql.core.context import BaseContext, ContextError, ContextT, context_of
from macsql.core.records import ConversationTurn
from macsql.core.state import KeptRows, PipelineState

UNFINISHED = "failed: the run did not finish"
"""The outcome of a turn whose run started and never ended."""
OUTCOME_CHARS = 300
"""The most characters of a failure's message kept in a turn's outcome."""

CONVERSATION_KEYS = frozenset({"asked", "thread_turn"})
"""State keys of the conversation itself, kept with the thread beside the input and output."""


def on_thread(config: RunnableConfig | None) -> bool:
    return bool(((config or {}).get("configurable") or {}).get("thread_id"))


def turn_outcome(state: Mapping[str, Any]) -> str:
    """How a finished run went, as the next turn's rewriter reads it."""
    status = state.get("status")
    if status == "ok":
        return str(state.get("outcome") or "ok")
    if status == "paused":
        return "paused: its SQL waits for a person's approval"
    why = state.get("error") or state.get("model_error") or "no SQL could be run"
    return "failed: " + " ".join(str(why).split())[:OUTCOME_CHARS]


def open_turn(question: str, standalone: str) -> ConversationTurn:
    """The record of a turn that has started: failed until its run closes it."""
    return {
        "question": question,
        "standalone_question": standalone,
        "sql": "",
        "outcome": UNFINISHED,
    }


def closed_turn(state: Mapping[str, Any]) -> ConversationTurn:
    """The record of the run that just ended on this thread."""
    question = str(state.get("asked") or state.get("question") or "")
    return {
        "question": question,
        "standalone_question": str(state.get("standalone_question") or question),
        "sql": str(state.get("sql") or ""),
        "outcome": turn_outcome(state),
    }


def with_turn(turns: list[ConversationTurn], turn: ConversationTurn) -> list[ConversationTurn]:
    """`turns` ending with `turn`: it replaces the last record when that is the same question
    still open (or being closed), else it is appended."""
    if turns and turns[-1].get("question") == turn.get("question"):
        return [*turns[:-1], turn]
    return [*turns, turn]


def failed_turn(question: str, why: str) -> ConversationTurn:
    """The record of a turn whose run failed outside the graph (it was cancelled, or raised)."""
    reason = " ".join(why.split())[:OUTCOME_CHARS] or "the run failed"
    return {
        "question": question,
        "standalone_question": question,
        "sql": "",
        "outcome": f"failed: {reason}",
    }


def messages_beyond(messages: list[AnyMessage], human_turns: int) -> list[AnyMessage]:
    """The messages older than the last `human_turns` human messages (and their replies)."""
    humans = [i for i, m in enumerate(messages) if isinstance(m, HumanMessage)]
    if len(humans) <= human_turns:
        return []
    return messages[: humans[-human_turns]]


# ---------------------------------------------------------------------------------------------
# Working keys: what a turn's nodes write for themselves, emptied when the turn closes


def empty_value(annotation: Any) -> Any:
    """The empty value of a state key's type: [] for a list, {} for a mapping or TypedDict,
    '' for a string, False / 0 for a flag or a number, None otherwise."""
    origin = get_origin(annotation)
    if origin is typing.Annotated:
        return empty_value(get_args(annotation)[0])
    if origin in (typing.Union, types.UnionType):
        options = [a for a in get_args(annotation) if a is not type(None)]
        return empty_value(options[0]) if len(options) == len(get_args(annotation)) else None
    if origin is typing.Literal:
        return None
    kind = origin or annotation
    if isinstance(kind, type):
        for base, empty in ((bool, False), (int, 0), (float, 0.0), (str, ""), (list, [])):
            if issubclass(kind, base):
                return empty
        if issubclass(kind, dict) or hasattr(kind, "__total__"):  # TypedDicts
            return {}
    return None


def working_keys(builder: Any) -> dict[str, Any]:
    """Each working key of `builder`'s state (neither input, output nor conversation), with the
    update that empties it (past its reducer, when it has one)."""
    hints = typing.get_type_hints(builder.state_schema, include_extras=True)
    kept = set(CONVERSATION_KEYS)
    for schema in (builder.input_schema, builder.output_schema):
        kept |= set(typing.get_type_hints(schema))
    updates: dict[str, Any] = {}
    for name, channel in builder.channels.items():
        if name in kept or name not in hints:
            continue
        empty = empty_value(hints[name])
        # A channel with a reducer would merge the empty value; Overwrite replaces.
        has_reducer = hasattr(channel, "operator")
        updates[name] = Overwrite(empty) if has_reducer else empty
    return updates


def close_turn_node(
    emptied: Mapping[str, Any],
) -> Callable[[PipelineState, Runtime[ContextT]], PipelineState]:
    """The `close_turn` node of a graph whose working keys are `emptied` (`working_keys`)."""

    def close_turn(state: PipelineState, runtime: Runtime[ContextT]) -> PipelineState:
        try:
            context = context_of(runtime, BaseContext)
        except (ContextError, TypeError):  # the run failed on it already: record that
            context = BaseContext()
        turn = closed_turn(state)
        turns = with_turn(list(state.get("turns") or []), turn)
        update: dict[str, Any] = {
            # Written whether set or not: the node sees only `PipelineState`'s keys.
            **emptied,
            "turns": turns[-(context.history_turns + 1) :],
            "thread_turn": False,
        }
        old = messages_beyond(list(state.get("messages") or []), context.history_turns + 1)
        if old:
            update["messages"] = [RemoveMessage(id=m.id) for m in old if m.id]
        if context.thread_rows and state.get("rows"):
            update["rows"] = KeptRows(state.get("rows") or [])
        return typing.cast(PipelineState, update)

    close_turn.__name__ = "close_turn"
    return close_turn


def closes_turn(state: PipelineState) -> bool:
    """Whether the run ends through `close_turn`: it ran on a thread (`contextualize` says so)."""
    return bool(state.get("thread_turn"))
