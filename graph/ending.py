"""A last step that only some runs take: every way a graph ends goes through it when asked.

`end_through(builder, node, wanted)` wraps each route of `builder` that can end the run: where
the route says END and `wanted(state, context)` holds, the run goes to `node` (which then ends
it) instead. Runs that do not want it end exactly as before: no extra step.
"""

# No `from __future__ import annotations`: LangGraph reads the wrapper's parameter types at run
# time to decide whether to pass it `config` and `runtime`.

import inspect
from collections.abc import Callable
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.graph import END
from langgraph.runtime import Runtime

from macsql.graph.context import BaseContext, context_of
from macsql.nodes.answer import answer_node, answer_wanted
from macsql.nodes.thread_turns import close_turn_node, closes_turn, working_keys


def end_through(builder: Any, node: str, wanted: Callable[[Any, BaseContext], bool]) -> Any:
    """`builder`, with `node` (already added) taken instead of END when `wanted`."""
    for source, branches in list(builder.branches.items()):
        for name, spec in list(branches.items()):
            ends = dict(spec.ends or {})
            if END not in ends.values():
                continue
            del branches[name]
            _add_route(builder, source, _rerouted(spec.path, node, wanted, name), ends, node)
            # The router reads the state keys its own annotation named, not the wrapper's.
            new_name = f"{name}_or_{node}"
            branches[new_name] = branches[new_name]._replace(input_schema=spec.input_schema)
    for source, target in list(builder.edges):
        if target == END and source != node:
            builder.edges.remove((source, target))
            _add_route(builder, source, _rerouted(None, node, wanted, source), {END: END}, node)
    builder.add_edge(node, END)
    return builder


def _add_route(
    builder: Any, source: str, route: Callable[..., Any], ends: dict[Any, str], node: str
) -> None:
    builder.add_conditional_edges(source, route, {**ends, node: node})


def _rerouted(
    path: Any, node: str, wanted: Callable[[Any, BaseContext], bool], name: str
) -> Callable[..., Any]:
    original = _direct(path)

    def route(state: Any, config: RunnableConfig, runtime: Runtime) -> Any:
        result = END if original is None else original(state, config, runtime)
        if result == END and wanted(state, context_of(runtime, BaseContext)):
            return node
        return result

    route.__name__ = f"{name}_or_{node}"
    # The router it wraps, for inspection (not `__wrapped__`: LangGraph would then read that
    # router's parameters and stop passing `config` and `runtime` to this one).
    route.original = getattr(path, "func", None)  # type: ignore[attr-defined]
    return route


_INJECTED = {"config", "runtime"}


def _direct(path: Any) -> Callable[[Any, RunnableConfig, Runtime], Any] | None:
    """The router inside `path`, called with what it asks for of `config` and `runtime`: as
    LangGraph would call it, without the second traced run (callbacks, config patching) that
    `path.invoke` would start inside this route's own. A router that asks for anything else
    (a store, a writer) is invoked as a runnable."""
    if path is None:
        return None
    func = getattr(path, "func", None)
    params = list(inspect.signature(func).parameters)[1:] if callable(func) else None
    if func is None or params is None or not set(params) <= _INJECTED:
        return lambda state, config, _runtime: path.invoke(state, config)

    def call(state: Any, config: RunnableConfig, runtime: Runtime) -> Any:
        given = {"config": config, "runtime": runtime}
        return func(state, **{p: given[p] for p in params})

    return call


def with_answer(builder: Any) -> Any:
    """`builder` with the `answer` node, which runs last when `Context.answer` is on."""
    builder.add_node("answer", answer_node)
    return end_through(builder, "answer", answer_wanted)


CLOSE_TURN = "close_turn"


def with_closed_turns(builder: Any) -> Any:
    """`builder` with `close_turn`, which a run on a conversation thread ends through (after
    `answer`): it records how the turn went and empties the working keys, so that the thread
    keeps the conversation and the caller's keys, not the run's intermediate results."""
    builder.add_node(CLOSE_TURN, close_turn_node(working_keys(builder)))
    return end_through(builder, CLOSE_TURN, closes_turn)


def with_endings(builder: Any) -> Any:
    """`builder` with both optional last steps: `answer`, then `close_turn`."""
    return with_closed_turns(with_answer(builder))
