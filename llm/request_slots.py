"""A cap on the model requests in flight, shared by every graph run inside it.

A model endpoint limits concurrent requests, not pipeline runs: an R^3 item fans out to several
reviewers at once, and a MAC-SQL item spends part of its time executing SQL, when it holds no
request at all. Counting requests lets a batch keep the endpoint exactly as busy as asked
while local work (schemas, SQL execution, scoring) overlaps the model's latency.

    with limit_model_requests(8) as slots:
        await asyncio.gather(*(graph.ainvoke(...) for ...))
    slots.peak  # the most requests that were in flight at once

The cap is a context variable, so it follows asyncio tasks and the executor threads LangGraph
runs sync nodes in (langchain copies the context into them); graphs outside the block are not
limited. Every model call goes through `macsql.llm.calls.call_model`, which takes a slot.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar


class RequestSlots:
    """At most `limit` holders at once, across threads; records the peak."""

    def __init__(self, limit: int) -> None:
        if limit < 1:
            raise ValueError(f"a request limit must be at least 1, not {limit}")
        self.limit = limit
        self._free = threading.BoundedSemaphore(limit)
        self._lock = threading.Lock()
        self.in_flight = 0
        self.peak = 0

    @contextmanager
    def hold(self) -> Iterator[None]:
        with self._free:
            with self._lock:
                self.in_flight += 1
                self.peak = max(self.peak, self.in_flight)
            try:
                yield
            finally:
                with self._lock:
                    self.in_flight -= 1


_current: ContextVar[RequestSlots | None] = ContextVar("macsql_model_request_slots", default=None)


@contextmanager
def limit_model_requests(limit: int) -> Iterator[RequestSlots]:
    """Cap the model requests of every graph run in this block (and the tasks and threads it
    starts) at `limit` in flight."""
    slots = RequestSlots(limit)
    token = _current.set(slots)
    try:
        yield slots
    finally:
        _current.reset(token)


@contextmanager
def model_request_slot() -> Iterator[None]:
    """Hold one slot of the enclosing cap, waiting for one if all are taken; no cap, no wait."""
    slots = _current.get()
    if slots is None:
        yield
        return
    with slots.hold():
        yield
