"""The ASGI app that each `macsql serve` worker runs: Aegra's, unchanged, with two things done
at the worker's start.

- The event loop's default executor gets `MACSQL_SERVER_THREADS` threads. LangGraph runs the
  graphs' sync nodes there, and its default size (cores + 4, six here) would cap a worker at six
  runs in its nodes at once, whatever the clients send.
- The pipelines, and the OpenAI-compatible client that the default model uses, are imported
  before the first request, not by it (they take about a second to import); a worker that a
  request reaches first is then as fast as the others.

Aegra is imported on the first ASGI call (the lifespan's startup), not when this module is: its
settings come from the environment that `macsql serve` sets, and importing this module must stay
free of side effects.
"""

from __future__ import annotations

import asyncio
import os
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
    await _engine(scope, receive, send)
