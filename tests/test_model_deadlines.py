"""`model_timeout` is a total deadline per model call, whatever the server does.

The project's scripted OpenAI-compatible server injects the faults: an answer that trickles one
byte at a time, a server that never answers, and HTTP 500 on every request. The real
`langchain-openai` client talks to it over 127.0.0.1.
"""

from __future__ import annotations

import threading
import time
from typing import Any

import langchain_openai  # noqa: F401  (a one-off local import, not part of any deadline)
import pytest
from conftest import spider_db
from test_deadline_workers import until_idle
from timing import generous

from macsql.core.context import Agent, Context
from macsql.graph.macsql_graph import graph
from macsql.llm import calls
from macsql.llm.calls import call_model
from macsql.llm.deadlines import cancel_scope
from macsql.llm.settings import ModelSettings
from macsql.testing.scripted import ScriptedOpenAIServer, Silent, Trickle

TIMEOUT = 1.0


def settings(server: ScriptedOpenAIServer, *, timeout: float = TIMEOUT) -> ModelSettings:
    return ModelSettings(
        model="openai:scripted",
        base_url=server.base_url,
        api_key="x",
        timeout=timeout,
        max_retries=2,
    )


FAULTS: dict[str, Any] = {
    "trickle": lambda _prompt: Trickle(interval=0.3),
    "silent": lambda _prompt: Silent(),
    "http_500": lambda _prompt: 500,
}


@pytest.mark.parametrize("fault", sorted(FAULTS))
def test_call_returns_within_model_timeout_whatever_the_server_does(fault: str) -> None:
    with ScriptedOpenAIServer(FAULTS[fault]) as server:
        started = time.monotonic()
        reply = call_model(settings(server), "decomposer", "hello")
        elapsed = time.monotonic() - started
        assert reply.failed, reply.text
        assert elapsed <= generous(TIMEOUT + 0.5), f"{fault}: {elapsed:.2f}s"
        if fault != "http_500":
            assert "model_timeout" in (reply.error or "")
            # the abandoned request ends and no retry is sent after the deadline
            time.sleep(0.8)
            assert server.requests == 1


def test_server_errors_are_retried_within_the_deadline() -> None:
    replies: list[Any] = [500, 500, "```sql\nSELECT 1\n```"]
    with ScriptedOpenAIServer(replies) as server:
        reply = call_model(settings(server, timeout=10), "decomposer", "hello")
        assert not reply.failed, reply.error
        assert server.requests == 3


@pytest.mark.needs_data("spider")
def test_ask_with_a_trickling_model_returns_within_model_timeout() -> None:
    with ScriptedOpenAIServer(lambda _p: Trickle(interval=0.3)) as server:
        context = Context(
            model="openai:scripted",
            base_url=server.base_url,
            api_key="x",
            model_timeout=TIMEOUT,
            model_max_retries=2,
            dataset_style="spider",
        )
        started = time.monotonic()
        out = graph.invoke(
            {"question": "How many singers are there?", "db": str(spider_db("concert_singer"))},
            context=context,
        )
        elapsed = time.monotonic() - started
    assert out["status"] == "failed"
    assert "model_timeout" in (out.get("error") or "")
    assert elapsed <= generous(TIMEOUT + 1.0), f"{elapsed:.2f}s"  # plus loading the schema


def test_a_cancel_scope_stops_the_call_and_its_retries() -> None:
    with ScriptedOpenAIServer(lambda _p: Silent()) as server, cancel_scope() as cancel:
        threading.Timer(0.3, cancel.set).start()
        started = time.monotonic()
        reply = call_model(settings(server, timeout=30), Agent.DECOMPOSER.value, "hello")
        elapsed = time.monotonic() - started
        assert reply.failed and "cancelled" in (reply.error or "")
        assert elapsed < generous(0.3)
        time.sleep(0.5)
        assert server.requests == 1


def test_a_structured_request_is_bounded_by_the_same_deadline() -> None:
    from pydantic import BaseModel

    class Answer(BaseModel):
        sql: str

    with ScriptedOpenAIServer(lambda _p: Silent()) as server:
        started = time.monotonic()
        reply = call_model(settings(server), "decomposer", "hello", schema=Answer)
        elapsed = time.monotonic() - started
        assert reply.failed and "model_timeout" in (reply.error or "")
        assert elapsed <= generous(TIMEOUT + 0.5)


def test_model_clients_share_one_tls_context(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each httpx client loads the CA bundle unless given a context: the sync and async clients
    of every model share one, and a call through it still works."""
    import httpx

    from macsql.llm import deadlines
    from macsql.llm.models import get_chat_model

    made: list[object] = []
    real = httpx.create_ssl_context

    def counting(*args: Any, **kwargs: Any) -> Any:
        made.append(real(*args, **kwargs))
        return made[-1]

    monkeypatch.setattr(httpx, "create_ssl_context", counting)
    deadlines.shared_tls_context.cache_clear()
    try:
        with ScriptedOpenAIServer(lambda _prompt: "pong") as server:
            clients = [
                get_chat_model(
                    ModelSettings(
                        model="openai:m", base_url=server.base_url, api_key="k", timeout=timeout
                    )
                )
                for timeout in (7.0, 8.0)
            ]
            assert clients[0] is not clients[1]
            assert clients[0].invoke("ping").content == "pong"
    finally:
        deadlines.shared_tls_context.cache_clear()
    assert len(made) == 1
    pools = [getattr(c, attr)._transport._pool for c in clients for attr in HTTP_CLIENTS]
    assert all(pool._ssl_context is made[0] for pool in pools)


HTTP_CLIENTS = ("http_client", "http_async_client")  # the OpenAI SDK's sync and async transport


def test_model_calls_reuse_a_worker_and_a_silent_server_still_times_out() -> None:
    pool = calls._MODEL_WORKERS
    with ScriptedOpenAIServer(lambda _p: "```sql\nSELECT 1\n```") as server:
        assert not call_model(settings(server), "decomposer", "hello").failed
        until_idle(pool)
        started = pool.started
        for _ in range(5):
            assert not call_model(settings(server), "decomposer", "hello").failed
            until_idle(pool)
        assert pool.started == started
    with ScriptedOpenAIServer(lambda _p: Silent()) as silent:
        began = time.monotonic()
        reply = call_model(settings(silent), "decomposer", "hello")
        assert reply.failed and "model_timeout" in (reply.error or "")
        assert time.monotonic() - began <= generous(TIMEOUT + 0.5)


def test_a_reused_model_worker_sees_each_callers_cancel_scope() -> None:
    pool = calls._MODEL_WORKERS
    with ScriptedOpenAIServer(lambda _p: "```sql\nSELECT 1\n```") as server:
        call_model(settings(server), "decomposer", "hello")
        until_idle(pool)
    with ScriptedOpenAIServer(lambda _p: Silent()) as silent, cancel_scope() as cancel:
        threading.Timer(0.2, cancel.set).start()
        began = time.monotonic()
        reply = call_model(settings(silent, timeout=30), "decomposer", "hello")
        assert reply.failed and "cancelled" in (reply.error or "")
        assert time.monotonic() - began < generous(0.2)
