"""The eval runs an in-process graph through its sync `invoke`, in one of the loop's threads.

`ainvoke` would send every sync node and router of the graph through the executor and make each
step an asyncio task (about 4.5 ms of CPU per question at concurrency 1, docs/benchmarks/
overhead.md); what reaches the nodes must stay the same: the item's cancel scope and the trace
recording (both context variables), and a graph that has only `ainvoke` (a server's) keeps it.
"""

from __future__ import annotations

import asyncio
import threading
from typing import Any

from langgraph.graph import END, START, StateGraph
from typing_extensions import TypedDict

from macsql.evals.datasets import EvalItem
from macsql.evals.item_records import predict
from macsql.evals.options import EvalOptions
from macsql.llm.deadlines import cancel_event


class _State(TypedDict, total=False):
    question: str
    db: str
    evidence: str
    sql: str
    status: str
    seen: list[Any]


def _graph(seen: list[dict[str, Any]]) -> Any:
    def write(state: _State) -> _State:
        seen.append({"thread": threading.get_ident(), "scope": cancel_event() is not None})
        return {"sql": "SELECT 1", "status": "ok"}

    def check(state: _State) -> _State:
        seen.append({"thread": threading.get_ident(), "scope": cancel_event() is not None})
        return {}

    builder: Any = StateGraph(_State)
    builder.add_node("write", write)
    builder.add_node("check", check)
    builder.add_edge(START, "write")
    builder.add_edge("write", "check")
    builder.add_edge("check", END)
    return builder.compile()


def _item(i: int) -> EvalItem:
    return EvalItem(index=i, db_id="db", question=f"question {i}", gold_sql="SELECT 1", db="x")


def test_an_in_process_graph_runs_through_invoke_in_a_worker_thread(monkeypatch: Any) -> None:
    seen: list[dict[str, Any]] = []
    graph = _graph(seen)
    calls: list[str] = []
    invoke, ainvoke = graph.invoke, graph.ainvoke

    def spy_invoke(*args: Any, **kwargs: Any) -> Any:
        calls.append("invoke")
        return invoke(*args, **kwargs)

    async def spy_ainvoke(*args: Any, **kwargs: Any) -> Any:
        calls.append("ainvoke")
        return await ainvoke(*args, **kwargs)

    monkeypatch.setattr(graph, "invoke", spy_invoke)
    monkeypatch.setattr(graph, "ainvoke", spy_ainvoke)
    options = EvalOptions(dataset="spider", data_dir=".")

    async def run() -> tuple[list[dict[str, Any]], int]:
        loop_thread = threading.get_ident()
        records = await asyncio.gather(*(predict(_item(i), options, graph, None) for i in range(5)))
        return list(records), loop_thread

    records, loop_thread = asyncio.run(run())
    assert calls == ["invoke"] * 5
    assert [r["prediction"] for r in records] == ["SELECT 1"] * 5
    assert all(r["status"] == "ok" for r in records)
    # The nodes ran in worker threads, not the event loop's, and the item's cancel scope
    # reached them.
    assert len(seen) == 10 and all(s["scope"] for s in seen)
    assert all(s["thread"] != loop_thread for s in seen)


def test_a_graph_with_only_ainvoke_keeps_it() -> None:
    class ServerLike:
        async def ainvoke(self, payload: dict[str, Any], context: Any = None) -> dict[str, Any]:
            return {"sql": "SELECT 2", "status": "ok"}

    options = EvalOptions(dataset="spider", data_dir=".")
    record = asyncio.run(predict(_item(0), options, ServerLike(), None))
    assert record["prediction"] == "SELECT 2"
