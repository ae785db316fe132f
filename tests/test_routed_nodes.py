"""Nodes that route as they return (`add_routed_node`) behave as node + conditional edge did.

The router sees the state a conditional edge's router would have seen (the node's writes
applied through the reducers), the drawn graph has the same edges, and the graphs take no
router step except where a conditional edge is kept on purpose.
"""

import operator
import random
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Annotated, Any, Literal, TypedDict

import pytest
from langgraph.graph import END, START, StateGraph
from langgraph.types import Overwrite

import macsql.graph.macsql_graph as macsql_graph
import macsql.graph.r3_graph as r3_graph
import macsql.graph.routing as routing
import macsql.graph.sqlfix_graph as sqlfix_graph
from macsql.graph.routed_nodes import add_routed_node


class Toy(TypedDict, total=False):
    plain: int
    items: Annotated[list[int], operator.add]
    total: Annotated[int, operator.add]
    seen: dict[str, Any]


def _toy_graph(update: dict[str, Any], routed: bool) -> tuple[Any, list[dict[str, Any]]]:
    """`first` writes `update`; its router records the state it is given and goes on."""
    seen: list[dict[str, Any]] = []

    def first(state: Toy) -> dict[str, Any]:
        return dict(update)

    def route(state: Toy) -> Literal["second"]:
        seen.append({k: state.get(k) for k in ("plain", "items", "total")})
        return "second"

    builder: Any = StateGraph(Toy)
    if routed:
        add_routed_node(builder, "first", first, route)
    else:
        builder.add_node("first", first)
        builder.add_conditional_edges("first", route)
    builder.add_node("second", lambda state: {})
    builder.add_edge(START, "first")
    builder.add_edge("second", END)
    return builder.compile(), seen


def _generated(rng: random.Random, writes: bool) -> dict[str, Any]:
    """A state or a node's update over `Toy`'s keys: any subset, lists or `Overwrite`s."""
    out: dict[str, Any] = {}
    if rng.random() < 0.6:
        out["plain"] = rng.randint(-5, 5)
    if rng.random() < 0.6:
        items = [rng.randint(0, 9) for _ in range(rng.randint(0, 3))]
        out["items"] = Overwrite(items) if writes and rng.random() < 0.3 else items
    if rng.random() < 0.6:
        out["total"] = rng.randint(0, 9)
    return out


@pytest.mark.parametrize("seed", range(3))
def test_the_router_sees_what_a_conditional_edge_router_sees(seed: int) -> None:
    rng = random.Random(seed)
    for _ in range(50):
        start, update = _generated(rng, writes=False), _generated(rng, writes=True)
        edge_graph, edge_seen = _toy_graph(update, routed=False)
        routed_graph, routed_seen = _toy_graph(update, routed=True)
        edge_out = edge_graph.invoke(dict(start))
        routed_out = routed_graph.invoke(dict(start))
        assert routed_seen == edge_seen, (start, update)
        assert routed_out == edge_out, (start, update)


def test_a_route_to_end_ends_the_run_and_sends_fan_out() -> None:
    from langgraph.types import Send

    def fan(state: Toy) -> dict[str, Any]:
        return {"plain": 1}

    def route(state: Toy) -> list[Send] | Literal["__end__"]:
        if state.get("total", 0) >= 2:
            return END
        return [Send("leaf", {"total": 1}), Send("leaf", {"total": 1})]

    builder: Any = StateGraph(Toy)
    add_routed_node(builder, "fan", fan, route, destinations=["leaf", END])
    builder.add_node("leaf", lambda task: {"total": task["total"]})
    builder.add_edge(START, "fan")
    builder.add_edge("leaf", "fan")
    out = builder.compile().invoke({})
    assert (out["plain"], out["total"]) == (1, 2)


@contextmanager
def _conditional_edges() -> Iterator[None]:
    """Build graphs as before: each routed node as a node plus a conditional edge."""

    def as_edge(builder: Any, name: str, node: Any, route: Any, **kw: Any) -> None:
        builder.add_node(name, node, input_schema=kw.get("input_schema"))
        destinations = kw.get("destinations")
        builder.add_conditional_edges(name, route, list(destinations) if destinations else None)

    modules = (macsql_graph, r3_graph, sqlfix_graph, routing)
    saved = [m.add_routed_node for m in modules]
    for m in modules:
        m.add_routed_node = as_edge  # type: ignore[attr-defined]
    try:
        yield
    finally:
        for m, f in zip(modules, saved, strict=True):
            m.add_routed_node = f  # type: ignore[attr-defined]


BUILDERS = {
    "macsql": macsql_graph.build_macsql_graph,
    "sqlfix": sqlfix_graph.build_sqlfix_graph,
    "r3": r3_graph.build_r3_graph,
}


def _edges(builder: Any) -> set[tuple[str, str, bool]]:
    return {(e.source, e.target, e.conditional) for e in builder.compile().get_graph().edges}


@pytest.mark.parametrize("name", sorted(BUILDERS))
def test_the_drawn_graph_keeps_its_edges(name: str) -> None:
    with _conditional_edges():
        before = _edges(BUILDERS[name]())
    assert _edges(BUILDERS[name]()) == before


@pytest.mark.parametrize(
    ("name", "kept"),
    [("macsql", {START, "link_schema"}), ("sqlfix", {START}), ("r3", {START})],
)
def test_routes_take_no_router_step_but_where_kept(name: str, kept: set[str]) -> None:
    """A conditional edge remains only from START (which cannot return a Command) and, in
    MAC-SQL, for the Selector skip the design names as one."""
    assert set(BUILDERS[name]().branches) == kept
