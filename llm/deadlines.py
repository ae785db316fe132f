"""A total deadline per model call, and cancellation of a call from outside.

httpx's timeouts are per phase (connect, each read, ...): a server that sends one byte every
two seconds never trips a 5 s read timeout, and the client's own retries multiply any bound.
So `call_model` owns the deadline: it retries itself, the caller waits for the call with the
time left, and the HTTP client (through the event hooks below) gives every phase of a request
at most the time left and stops reading a body once the deadline has passed, so an abandoned
request ends soon after it and sends nothing more.

`cancel_scope()` ties the model calls made inside it (in any thread that copies the context,
as LangGraph's executor does) to an event: setting it ends those calls at once, and stops their
retries. The eval runner sets it when an item's time runs out.
"""

from __future__ import annotations

import functools
import ssl
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

import httpx


class CancelEvent:
    """A `threading.Event` that also wakes the calls waiting under it, so that a caller waits
    on its own call alone (no polling) and still hears a cancel at once."""

    def __init__(self) -> None:
        self._event = threading.Event()
        self._lock = threading.Lock()
        self._waiters: set[threading.Event] = set()

    def set(self) -> None:
        with self._lock:
            self._event.set()
            waiters = list(self._waiters)
        for waiter in waiters:
            waiter.set()

    def is_set(self) -> bool:
        return self._event.is_set()

    def wait(self, timeout: float | None = None) -> bool:
        return self._event.wait(timeout)

    @contextmanager
    def waking(self, waiter: threading.Event) -> Iterator[None]:
        """`waiter` is set too when this event is (at once, if it already is)."""
        with self._lock:
            self._waiters.add(waiter)
            already = self._event.is_set()
        if already:
            waiter.set()
        try:
            yield
        finally:
            with self._lock:
                self._waiters.discard(waiter)


_deadline: ContextVar[float | None] = ContextVar("macsql_model_deadline", default=None)
_cancel: ContextVar[CancelEvent | None] = ContextVar("macsql_model_cancel", default=None)


@contextmanager
def cancel_scope() -> Iterator[CancelEvent]:
    """Model calls made inside share an event; set it to cancel them."""
    event = CancelEvent()
    token = _cancel.set(event)
    try:
        yield event
    finally:
        _cancel.reset(token)


def cancel_event() -> CancelEvent | None:
    return _cancel.get()


def cancelled() -> bool:
    event = _cancel.get()
    return event is not None and event.is_set()


@contextmanager
def deadline_of_requests(deadline: float) -> Iterator[None]:
    """HTTP requests made by this thread inside the block end by `deadline` (time.monotonic)."""
    token = _deadline.set(deadline)
    try:
        yield
    finally:
        _deadline.reset(token)


def _time_left(request: httpx.Request) -> float | None:
    deadline = _deadline.get()
    if deadline is None:
        return None
    left = deadline - time.monotonic()
    if left <= 0 or cancelled():
        raise httpx.ReadTimeout("the model call's deadline has passed", request=request)
    return left


def _shrink_timeouts(request: httpx.Request) -> None:
    left = _time_left(request)
    if left is None:
        return
    timeouts = dict(request.extensions.get("timeout") or {})
    for phase in ("connect", "read", "write", "pool"):
        current = timeouts.get(phase)
        timeouts[phase] = left if current is None else min(current, left)
    request.extensions["timeout"] = timeouts


class _DeadlineStream(httpx.SyncByteStream):
    """A response body that stops once the call's deadline has passed, between chunks."""

    def __init__(self, inner: Any, request: httpx.Request) -> None:
        self._inner = inner
        self._request = request

    def __iter__(self) -> Iterator[bytes]:
        for chunk in self._inner:
            _time_left(self._request)
            yield chunk

    def close(self) -> None:
        self._inner.close()


def _bound_body(response: httpx.Response) -> None:
    if _deadline.get() is not None:
        response.stream = _DeadlineStream(response.stream, response.request)


@functools.cache
def shared_tls_context() -> ssl.SSLContext:
    """One TLS context for every model client of the process: each httpx client would
    otherwise load the CA bundle again (about 20 ms each, before the first request)."""
    return httpx.create_ssl_context()  # httpx's own default: certifi, or SSL_CERT_FILE/DIR


def deadline_http_client(timeout: float) -> httpx.Client:
    """An httpx client (with the OpenAI client's defaults) that honours the call deadline."""
    return httpx.Client(
        verify=shared_tls_context(),
        timeout=timeout,
        limits=httpx.Limits(max_connections=1000, max_keepalive_connections=100),
        follow_redirects=True,
        event_hooks={"request": [_shrink_timeouts], "response": [_bound_body]},
    )
