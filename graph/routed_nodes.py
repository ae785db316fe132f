"""Nodes that choose their next hop as they return, instead of through a conditional edge.

A conditional edge runs its router over a fresh copy of every channel of the graph with the
node's writes applied (LangGraph's `local_read(fresh=True)`): about 0.2 ms a route at these
graphs' ~50 channels, 5 to 7 routes a question. `add_routed_node` keeps the router a plain
function of the state, as a conditional edge's is, and calls it on the state as the node
leaves it: the state it was given with the node's update applied, through the same reducers.
The node then returns `Command(update=..., goto=...)`: one step, no copy.

The drawn graph (Studio, `get_graph()`) is unchanged: the router's `Literal` return type, or
`destinations`, names the dashed edges, as it does for `add_conditional_edges`.
"""

# No `from __future__ import annotations`: the routers' and nodes' parameter names and the
# routers' return types are read at build time.

import inspect
from collections.abc import Callable, Hashable, Mapping, Sequence
from typing import Any, Literal, get_args, get_origin, get_type_hints

from langchain_core.runnables import RunnableConfig
from langgraph.channels.binop import BinaryOperatorAggregate
from langgraph.graph import END
from langgraph.runtime import Runtime
from langgraph.types import Command, Overwrite, Send

Route = Callable[..., Hashable | Sequence[Hashable] | Send | Sequence[Send]]

# What LangGraph passes a node or a router besides the state, by parameter name.
_INJECTED = ("runtime", "config")


def add_routed_node(
    builder: Any,
    name: str,
    node: Callable[..., Any],
    route: Route,
    *,
    input_schema: type[Any] | None = None,
    destinations: Sequence[str] | None = None,
) -> None:
    """Add `name` running `node`, then going where `route` says.

    `route` is what `add_conditional_edges(name, route)` would take: a function of the state
    (and, by parameter name, `runtime` and `config`) returning a node name, `END`, a `Send` or
    a list of them. The node sees `input_schema`, by default the graph's whole state (its keys
    are the graph's channels either way)."""
    ends = tuple(destinations) if destinations is not None else _literal_ends(route)
    builder.add_node(
        name,
        routed(node, route, builder.channels),
        input_schema=input_schema or builder.state_schema,
        destinations=ends,
    )


def routed(
    node: Callable[..., Any], route: Route, channels: Mapping[str, Any]
) -> Callable[[dict[str, Any], Runtime[Any], RunnableConfig], Command[Any]]:
    """`node` followed by `route` over the state as the node leaves it, as one function."""
    node_wants = _injected(node)
    route_wants = _injected(route)

    def run(state: dict[str, Any], runtime: Runtime[Any], config: RunnableConfig) -> Command[Any]:
        given = {"runtime": runtime, "config": config}
        update = node(state, **{k: given[k] for k in node_wants}) or {}
        goto = route(after(state, update, channels), **{k: given[k] for k in route_wants})
        return Command(update=update, goto=_as_goto(goto))

    run.__name__ = getattr(node, "__name__", "node")
    run.__qualname__ = run.__name__
    run.__doc__ = node.__doc__
    run.route = route  # type: ignore[attr-defined]  # read back by `routes`
    return run


def routes(builder: Any) -> dict[str, list[Route]]:
    """Every router of a graph builder by the node it routes from: the routed nodes' and the
    conditional edges' (START's among them), so that a check over a graph's routes sees both."""
    found: dict[str, list[Route]] = {}
    for name, spec in builder.nodes.items():
        route = getattr(getattr(spec.runnable, "func", None), "route", None)
        if route is not None:
            found.setdefault(name, []).append(route)
    for source, branches in builder.branches.items():
        found.setdefault(source, []).extend(b.path.func for b in branches.values())
    return found


def after(
    state: Mapping[str, Any], update: Mapping[str, Any], channels: Mapping[str, Any]
) -> dict[str, Any]:
    """The state once `update` is applied: a key with a reducer gets the reducer's result
    (`Overwrite` bypasses it), any other key the value written, as LangGraph's channels would
    hold them."""
    merged = dict(state)
    for key, value in update.items():
        channel = channels.get(key)
        if isinstance(value, Overwrite):
            merged[key] = value.value
        elif isinstance(channel, BinaryOperatorAggregate) and key in merged:
            merged[key] = channel.operator(merged[key], value)
        else:
            merged[key] = value
    return merged


def _as_goto(goto: Any) -> Any:
    if isinstance(goto, (list, tuple)):
        return [g for g in goto if g != END]
    return () if goto == END else goto


def _injected(fn: Callable[..., Any]) -> tuple[str, ...]:
    parameters = list(inspect.signature(fn).parameters)[1:]
    return tuple(p for p in parameters if p in _INJECTED)


def _literal_ends(route: Route) -> tuple[str, ...]:
    """The node names a router's `Literal[...]` return type lists (in a union too), as
    `add_conditional_edges` reads them for the drawing."""
    returned = get_type_hints(route).get("return")
    if returned is None:
        raise ValueError(f"{route.__name__}: name its destinations (a Literal return type)")
    literals = [returned] if get_origin(returned) is Literal else list(get_args(returned))
    return tuple(str(v) for lit in literals if get_origin(lit) is Literal for v in get_args(lit))
