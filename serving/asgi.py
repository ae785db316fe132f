"""The ASGI app that each `macsql serve` worker runs: Aegra's, unchanged, with two things done
at the worker's start.

- The event loop's default executor gets `MACSQL_SERVER_THREADS` threads. LangGraph runs the
  graphs' sync nodes there, and its default size (cores + 4, six here) would cap a worker at six
  runs in its nodes at once, whatever the clients send.
- The pipelines, and the OpenAI-compatible client that the default model uses, are imported
  before the first request, not by it (they take about a second to import); a worker that a
  request reaches first is then as fast as the others.

And one thing on the way out: a run that ends in error answers `runs.wait` and `runs.join` as
LangGraph's own server does, `{"__error__": {"error", "message"}}` (the SDK's `runs.wait` raises
it), where Aegra 0.6 answers `{}`, which reads as a run with no output. Such a body is looked up:
the run's status and `error_message`, through the same app with the request's own headers.

Aegra is imported on the first ASGI call (the lifespan's startup), not when this module is: its
settings come from the environment that `macsql serve` sets, and importing this module must stay
free of side effects.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
from collections.abc import Awaitable, Callable, MutableMapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]

THREADS_ENV = "MACSQL_SERVER_THREADS"
DEFAULT_THREADS = 64

_engine: Any = None


def _load_engine() -> Any:
    from macsql.graph.registry import pipeline_names
    from macsql.serving.graphs import served_graph

    for name in pipeline_names():
        served_graph(name)
    import langchain_openai  # noqa: F401  (what init_chat_model("openai:...") imports)
    from aegra_api.main import app as engine

    return engine


async def app(scope: Scope, receive: Receive, send: Send) -> None:
    global _engine
    if _engine is None:
        if scope["type"] == "lifespan":
            threads = int(os.environ.get(THREADS_ENV) or DEFAULT_THREADS)
            asyncio.get_running_loop().set_default_executor(
                ThreadPoolExecutor(max_workers=threads, thread_name_prefix="macsql-node")
            )
        _engine = _load_engine()
    if scope["type"] == "http" and scope.get("method") in ("GET", "POST"):
        run = _awaited_run(scope)
        if run is not None:
            await _with_run_error(scope, receive, send, *run)
            return
    await _engine(scope, receive, send)


_WAIT = re.compile(r"^/threads/([^/]+)/runs/wait$")
_JOIN = re.compile(r"^/threads/([^/]+)/runs/([^/]+)/join$")
_FAILED = ("error", "timeout")


def _awaited_run(scope: Scope) -> tuple[str, str | None] | None:
    """(thread id, run id or None for the thread's newest) of a request that waits for a
    run's output, or None."""
    path = str(scope.get("path") or "")
    if scope.get("method") == "POST" and (wait := _WAIT.match(path)):
        return wait.group(1), None
    if scope.get("method") == "GET" and (join := _JOIN.match(path)):
        return join.group(1), join.group(2)
    return None


async def _with_run_error(
    scope: Scope, receive: Receive, send: Send, thread_id: str, run_id: str | None
) -> None:
    start: MutableMapping[str, Any] | None = None
    body = bytearray()

    async def keep(message: MutableMapping[str, Any]) -> None:
        nonlocal start
        if message["type"] == "http.response.start":
            start = message
        elif message["type"] == "http.response.body":
            body.extend(message.get("body", b""))

    await _engine(scope, receive, keep)
    if start is None:
        raise RuntimeError(f"the engine sent no response to {scope.get('path')}")
    out = bytes(body)
    if start["status"] == 200 and out.strip() == b"{}":
        failure = await _run_failure(scope, thread_id, run_id)
        if failure is not None:
            out = json.dumps({"__error__": failure}).encode()
            headers = [
                (k, v) for k, v in start.get("headers", []) if k.lower() != b"content-length"
            ]
            start = {**start, "headers": [*headers, (b"content-length", str(len(out)).encode())]}
    await send(start)
    await send({"type": "http.response.body", "body": out, "more_body": False})


async def _run_failure(scope: Scope, thread_id: str, run_id: str | None) -> dict[str, str] | None:
    """`{"error", "message"}` of the run when it ended in error, else None."""
    path = f"/threads/{thread_id}/runs" + (f"/{run_id}" if run_id else "")
    found = await _get_json(scope, path, b"" if run_id else b"limit=1")
    run = (found[0] if found else None) if isinstance(found, list) else found
    if not isinstance(run, dict) or run.get("status") not in _FAILED:
        return None
    status = str(run["status"])
    return {"error": status, "message": str(run.get("error_message") or f"the run ended: {status}")}


async def _get_json(scope: Scope, path: str, query: bytes) -> Any:
    """GET `path` from the engine with the request's headers (its auth), as JSON or None."""
    dropped = (b"content-length", b"content-type", b"transfer-encoding")
    headers = [(k, v) for k, v in scope.get("headers", []) if k.lower() not in dropped]
    sub = {**scope, "method": "GET", "path": path, "raw_path": path.encode(), "headers": headers}
    sub["query_string"] = query
    status = 0
    body = bytearray()

    async def receive() -> MutableMapping[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def keep(message: MutableMapping[str, Any]) -> None:
        nonlocal status
        if message["type"] == "http.response.start":
            status = int(message["status"])
        elif message["type"] == "http.response.body":
            body.extend(message.get("body", b""))

    await _engine(sub, receive, keep)
    if status != 200:
        return None
    try:
        return json.loads(bytes(body))
    except ValueError:
        return None
