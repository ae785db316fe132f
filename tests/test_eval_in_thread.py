"""An eval runs a built-in pipeline with `invoke` in one executor thread per item (`InThread`):
every node of an item in that thread, none in the event loop's, with the item's context (its
cancel scope); a pipeline named ``module:attribute`` may have async nodes and runs as it is."""

from __future__ import annotations

import asyncio
import contextvars
import threading
from typing import Any

from langgraph.graph import END, START, StateGraph
from typing_extensions import TypedDict

from macsql.evals.scheduler import InThread, eval_pipeline
from macsql.graph.registry import get_pipeline

_item: contextvars.ContextVar[str] = contextvars.ContextVar("item", default="none")


class _State(TypedDict, total=False):
    seen: list[tuple[int, str]]


def _step(state: _State) -> _State:
    return {"seen": [*state.get("seen", []), (threading.get_ident(), _item.get())]}


def _graph() -> Any:
    builder: Any = StateGraph(_State)
    for name in ("a", "b", "c"):
        builder.add_node(name, _step)
    builder.add_edge(START, "a")
    builder.add_edge("a", "b")
    builder.add_edge("b", "c")
    builder.add_edge("c", END)
    return builder.compile()


def test_an_items_nodes_run_in_one_thread_with_its_context() -> None:
    graph = InThread(_graph())

    async def main() -> tuple[int, list[Any]]:
        async def one(name: str) -> Any:
            _item.set(name)  # each task has its own context, as each eval item has
            return await graph.ainvoke({"seen": []})

        outs = await asyncio.gather(one("first"), one("second"))
        return threading.get_ident(), outs

    loop_thread, outs = asyncio.run(main())
    for out, name in zip(outs, ("first", "second"), strict=True):
        threads = {ident for ident, _ in out["seen"]}
        assert len(out["seen"]) == 3 and len(threads) == 1
        assert loop_thread not in threads
        assert {seen for _, seen in out["seen"]} == {name}


def test_built_in_pipelines_run_in_a_thread_and_others_as_they_are() -> None:
    built_in = eval_pipeline("macsql")
    assert isinstance(built_in, InThread) and built_in.graph is get_pipeline("macsql")
    custom = eval_pipeline("macsql.graph.macsql_graph:graph")
    assert custom is get_pipeline("macsql")  # no wrapper: its nodes could be async


def test_the_item_runs_through_invoke_not_ainvoke() -> None:
    class SyncOnly:
        def invoke(self, payload: Any, **kwargs: Any) -> Any:
            return {"payload": payload, **kwargs, "thread": threading.get_ident()}

        async def ainvoke(self, payload: Any, **kwargs: Any) -> Any:
            raise AssertionError("ainvoke hands every node to the executor and back")

    async def main() -> tuple[int, Any]:
        return threading.get_ident(), await InThread(SyncOnly()).ainvoke({"q": 1}, context="c")

    loop_thread, out = asyncio.run(main())
    assert out["payload"] == {"q": 1} and out["context"] == "c"
    assert out["thread"] != loop_thread
