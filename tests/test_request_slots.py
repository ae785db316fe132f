"""`limit_model_requests`: a cap on model requests in flight, through LangGraph and real HTTP."""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any, TypedDict

import pytest
from langgraph.graph import END, START, StateGraph
from langgraph.runtime import Runtime

from macsql.core.context import Agent, Context
from macsql.llm.agent_calls import call_agent
from macsql.llm.calls import call_model
from macsql.llm.request_slots import RequestSlots, limit_model_requests, model_request_slot
from macsql.llm.settings import ModelSettings
from macsql.testing.scripted import ScriptedOpenAIServer


class AskState(TypedDict, total=False):
    question: str
    reply: str
    latency: float


def _ask(state: AskState, runtime: Runtime[Context]) -> AskState:
    reply = call_agent(runtime.context, Agent.DECOMPOSER, state["question"])
    return {"reply": reply.text, "latency": reply.usage["decomposer"]["latency_s"]}


def _one_call_graph() -> Any:
    builder = StateGraph(AskState, context_schema=Context)
    builder.add_node("ask", _ask)  # a sync node: LangGraph runs it in an executor thread
    builder.add_edge(START, "ask")
    builder.add_edge("ask", END)
    return builder.compile()


def _run_six(server: ScriptedOpenAIServer, cap: int | None) -> tuple[list[AskState], int]:
    graph = _one_call_graph()
    context = Context(model="openai:scripted", base_url=server.base_url, api_key="k")

    async def six() -> list[AskState]:
        calls = (graph.ainvoke({"question": f"q{i}"}, context=context) for i in range(6))
        return await asyncio.gather(*calls)

    async def main() -> tuple[list[AskState], int]:
        if cap is None:
            return await six(), 0
        with limit_model_requests(cap) as slots:
            outs = await six()
        return outs, slots.peak

    return asyncio.run(main())


def test_a_cap_holds_for_graphs_run_inside_it() -> None:
    with ScriptedOpenAIServer(lambda prompt: "ok", delay=0.1) as server:
        outs, peak = _run_six(server, cap=2)
        assert server.peak_in_flight == 2 == peak
        assert server.requests == 6
    assert [o["reply"] for o in outs] == ["ok"] * 6
    # Latency is the call's own, not the wait for a slot (the last pair waited ~0.2 s).
    assert max(o["latency"] for o in outs) < 0.25


def test_graphs_outside_a_cap_are_not_limited() -> None:
    with ScriptedOpenAIServer(lambda prompt: "ok", delay=0.2) as server:
        outs, _ = _run_six(server, cap=None)
        assert server.peak_in_flight == 6
    assert len(outs) == 6


def test_slots_count_holders_across_threads() -> None:
    slots = RequestSlots(3)
    together = threading.Barrier(4, timeout=5)

    def hold() -> None:
        with slots.hold():
            together.wait()  # the three holders and the main thread meet here
            time.sleep(0.05)

    threads = [threading.Thread(target=hold) for _ in range(3)]
    for t in threads:
        t.start()
    together.wait()  # all three slots are held now
    started = time.perf_counter()
    with slots.hold():  # so a fourth holder gets in only when one of them leaves
        waited = time.perf_counter() - started
    for t in threads:
        t.join(timeout=5)
    assert (slots.peak, slots.in_flight) == (3, 0)
    assert waited >= 0.04


def test_no_cap_means_no_slot_is_taken() -> None:
    with model_request_slot():  # returns at once, outside any cap
        pass
    with limit_model_requests(1) as slots:
        with model_request_slot():
            assert slots.in_flight == 1
        assert slots.in_flight == 0


def test_a_cap_below_one_is_refused() -> None:
    with pytest.raises(ValueError, match="at least 1"):
        RequestSlots(0)


def test_a_client_that_fails_to_build_is_a_failed_call_not_a_traceback(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def broken(settings: ModelSettings) -> Any:
        raise RuntimeError("provider package is broken")

    monkeypatch.setattr("macsql.llm.calls.get_chat_model", broken)
    with limit_model_requests(1) as slots:
        reply = call_model(ModelSettings("openai:gpt-4o-mini"), "decomposer", "q")
        assert slots.peak == 0  # no slot is taken for a call that never starts
    assert reply.failed
    assert reply.error == "model call failed (RuntimeError): provider package is broken"
