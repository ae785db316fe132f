"""One model call for an agent, with usage accounting and failures turned into data.

Agents reply in text (JSON objects and ```sql fences, as in the papers), so any chat model works,
including servers with no tool-calling or structured-output support.

`ModelSettings.timeout` is the call's total deadline, retries and backoff included: the request
runs in a worker thread that the caller waits for with the time left (or until the call's
`cancel_scope` is set), so the caller has control back within the timeout whatever the server
does (silent, trickling, failing). The worker starts no request after that.
"""

from __future__ import annotations

import contextvars
import random
import threading
import time
from dataclasses import dataclass
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage

from macsql.graph.state import Usage
from macsql.llm.deadlines import cancel_event, deadline_of_requests
from macsql.llm.models import ModelConfigError, get_chat_model, is_registered
from macsql.llm.request_slots import model_request_slot
from macsql.llm.settings import ModelSettings


@dataclass
class ModelReply:
    """The text of a reply, or the error that stopped it, plus the call's usage."""

    text: str
    error: str | None
    usage: Usage

    @property
    def failed(self) -> bool:
        return self.error is not None


def usage_entry(message: BaseMessage | None, latency: float, calls: int = 1) -> dict[str, float]:
    meta = getattr(message, "usage_metadata", None) or {}
    return {
        "calls": calls,
        "input_tokens": int(meta.get("input_tokens", 0) or 0),
        "output_tokens": int(meta.get("output_tokens", 0) or 0),
        "latency_s": round(latency, 6),
    }


def call_model(
    settings: ModelSettings,
    agent: str,
    prompt: str | list[BaseMessage],
    *,
    system: str | None = None,
) -> ModelReply:
    """Call the model once for `agent` (which names the call in usage and tags); a network,
    server or config failure becomes `error`."""
    messages: list[BaseMessage]
    messages = [HumanMessage(prompt)] if isinstance(prompt, str) else list(prompt)
    if system:
        messages.insert(0, SystemMessage(system))
    entered = time.monotonic()
    try:
        model = get_chat_model(settings)  # the first call builds the client: part of its time
    except ModelConfigError as exc:
        return ModelReply("", f"model configuration error: {exc}", {})
    except Exception as exc:  # a provider's package failing as it builds its client
        return _failed_call(agent, exc, 0.0)
    config: Any = {"tags": [f"macsql:{agent}"], "metadata": {"macsql_agent": agent}}
    built = time.monotonic() - entered
    with model_request_slot():  # latency and the deadline count from the slot, not the wait
        started = time.perf_counter()
        try:
            retries = 0 if is_registered(settings.model) else settings.max_retries
            deadline = time.monotonic() + settings.timeout - built
            reply = _invoke_within_deadline(model, messages, config, settings, retries, deadline)
        except Exception as exc:  # timeouts, HTTP errors after retries, provider errors
            return _failed_call(agent, exc, time.perf_counter() - started)
        latency = time.perf_counter() - started
    return ModelReply(_text_of(reply), None, {agent: usage_entry(reply, latency)})


class ModelDeadlineError(TimeoutError):
    """The call, retries included, did not finish within `model_timeout`."""


class ModelCallCancelled(Exception):
    """The call's cancel scope was set (its eval item ran out of time)."""


_POLL = 0.05
"""Seconds between checks of the cancel scope while a call is waited for."""


def _invoke_within_deadline(
    model: Any,
    messages: list[BaseMessage],
    config: Any,
    settings: ModelSettings,
    retries: int,
    deadline: float,
) -> Any:
    """`model.invoke` with retries, given back by `deadline` (time.monotonic())."""
    stop = threading.Event()
    box: dict[str, Any] = {}

    def attempts() -> None:
        with deadline_of_requests(deadline):
            for attempt in range(retries + 1):
                try:
                    box["reply"] = model.invoke(messages, config=config)
                    return
                except BaseException as exc:  # an interrupt is handed to the caller as is
                    box["error"] = exc
                    if not isinstance(exc, Exception) or attempt == retries:
                        return
                    if not _retryable(exc):
                        return
                pause = min(8.0, 0.5 * 2**attempt) * random.uniform(0.75, 1.25)
                if deadline - time.monotonic() <= pause or stop.wait(pause):
                    return

    # The worker sees the caller's context: callbacks, tags and the cancel scope.
    worker = threading.Thread(
        target=contextvars.copy_context().run, args=(attempts,), daemon=True, name="macsql-model"
    )
    worker.start()
    cancel = cancel_event()
    while worker.is_alive():
        left = deadline - time.monotonic()
        if cancel is not None and cancel.is_set():
            stop.set()
            raise ModelCallCancelled("the model call was cancelled: its item ran out of time")
        if left <= 0:
            stop.set()
            raise ModelDeadlineError(
                f"no reply within model_timeout ({settings.timeout:g}s, retries included)"
            )
        worker.join(min(left, _POLL) if cancel is not None else left)
    if "reply" in box:
        return box["reply"]
    raise box["error"]


_RETRY_STATUS = (408, 409, 429)
_RETRY_WORDS = ("timeout", "connection", "ratelimit", "overloaded", "unavailable")


def _retryable(exc: Exception) -> bool:
    """Rate limits, server errors, timeouts and dropped connections are worth another try."""
    status = getattr(exc, "status_code", None)
    if status is None:
        status = getattr(getattr(exc, "response", None), "status_code", None)
    if isinstance(status, int):
        return status in _RETRY_STATUS or status >= 500
    name = type(exc).__name__.lower()
    return any(word in name for word in _RETRY_WORDS)


def _failed_call(agent: str, exc: Exception, latency: float) -> ModelReply:
    return ModelReply(
        "",
        f"model call failed ({type(exc).__name__}): {_first_line(exc)}",
        {agent: usage_entry(None, latency)},
    )


def _text_of(message: Any) -> str:
    content = message.content if isinstance(message, AIMessage | BaseMessage) else message
    if isinstance(content, list):  # content blocks
        return "".join(b.get("text", "") if isinstance(b, dict) else str(b) for b in content)
    return str(content or "")


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0][:300] if text else type(exc).__name__
