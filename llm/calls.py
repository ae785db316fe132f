"""One model call for an agent, with usage accounting and failures turned into data.

Agents reply in text (JSON objects and ```sql fences, as in the papers), so any chat model works,
including servers with no tool-calling or structured-output support. A caller may also pass a
Pydantic `schema`: the call then asks for structured output (`with_structured_output`), and falls
back to text for the rest of the process when the model or server cannot do it
(`macsql.llm.structured`).

A reply's text is its answer only: a reasoning model's thinking (`<think>` blocks, or the
`reasoning_content` beside the text) goes to `ModelReply.reasoning`, and its tokens to usage.

`ModelSettings.timeout` is the call's total deadline, retries and backoff included: the request
runs in a worker thread that the caller waits for with the time left (or until the call's
`cancel_scope` is set), so the caller has control back within the timeout whatever the server
does (silent, trickling, failing). The worker starts no request after that.
"""

from __future__ import annotations

import contextlib
import contextvars
import json
import random
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage
from pydantic import BaseModel

from macsql.core.records import Usage, merge_usage
from macsql.core.worker_threads import WorkerThreads
from macsql.llm.deadlines import cancel_event, deadline_of_requests
from macsql.llm.models import ModelConfigError, endpoint_of, get_chat_model, is_registered
from macsql.llm.reasoning import reasoning_beside, split_reasoning
from macsql.llm.request_slots import model_request_slot
from macsql.llm.settings import ModelSettings
from macsql.llm.structured import StructuredAttempt, StructuredRun, ask_structured
from macsql.llm.traces import traced

MODEL_FAILURE_PREFIXES = ("model call failed", "model configuration error")
"""How every failed model call's error starts, so a batch can tell them from other failures."""


def is_model_failure(error: object) -> bool:
    return isinstance(error, str) and error.startswith(MODEL_FAILURE_PREFIXES)


AGENT_METADATA_KEY = "macsql_agent"
"""The run metadata key that names a model call's agent, for callbacks and in-process models."""

AGENT_HEADER = "X-Macsql-Agent"
"""The HTTP header naming the agent of a request to an OpenAI-compatible server. A header, not a
body field: the body stays what the server's API defines (OpenAI's `user` would reach OpenAI's
abuse monitoring), and servers and proxies ignore headers they do not know."""


@dataclass
class ModelReply:
    """The answer of a reply, or the error that stopped it, plus the call's usage."""

    text: str
    """The answer's text, without the model's reasoning."""
    error: str | None
    usage: Usage
    reasoning: str = ""
    """A reasoning model's thinking: kept for the trace, never read as the answer."""
    finish_reason: str | None = None
    """Why the reply ended: 'stop', or 'length' when the token limit cut it off."""
    structured: dict[str, Any] | None = None
    """The answer as the schema's fields, when structured output was asked for and given."""
    notes: list[str] = field(default_factory=list)
    """What happened on the way that the caller should record (a structured-output fallback)."""

    @property
    def failed(self) -> bool:
        return self.error is not None

    @property
    def cut_off(self) -> bool:
        return self.finish_reason == "length"


def usage_entry(message: BaseMessage | None, latency: float, calls: int = 1) -> dict[str, float]:
    meta = getattr(message, "usage_metadata", None) or {}
    entry: dict[str, float] = {
        "calls": calls,
        "input_tokens": int(meta.get("input_tokens", 0) or 0),
        "output_tokens": int(meta.get("output_tokens", 0) or 0),
        "latency_s": round(latency, 6),
    }
    reasoning = int((meta.get("output_token_details") or {}).get("reasoning", 0) or 0)
    if reasoning:  # part of output_tokens, shown apart for reasoning models
        entry["reasoning_tokens"] = reasoning
    return entry


@traced
def call_model(
    settings: ModelSettings,
    agent: str,
    prompt: str | list[BaseMessage],
    *,
    system: str | None = None,
    schema: type[BaseModel] | None = None,
    structured_run: StructuredRun | None = None,
) -> ModelReply:
    """Call the model once for `agent` (which names the call in usage and tags); a network,
    server or config failure becomes `error`. With `schema`, structured output is asked for
    where the model supports it (a rejected request then counts in usage, and the call is made
    again in text); `structured_run` remembers refusals and notes for the run."""
    messages: list[BaseMessage]
    messages = [HumanMessage(prompt)] if isinstance(prompt, str) else list(prompt)
    if system:
        messages.insert(0, SystemMessage(system))
    entered = time.monotonic()
    try:
        model = get_chat_model(settings)  # the first call builds the client: part of its time
    except ModelConfigError as exc:
        return ModelReply("", f"{MODEL_FAILURE_PREFIXES[1]}: {exc}", {})
    except Exception as exc:  # a provider's package failing as it builds its client
        return _failed_call(settings, agent, exc, 0.0, requested=False)
    config: Any = {"tags": [f"macsql:{agent}"], "metadata": {AGENT_METADATA_KEY: agent}}
    built = time.monotonic() - entered
    attempt = StructuredAttempt()
    if schema is not None:
        with model_request_slot():
            # The structured request is bounded by the same model_timeout.
            started_structured = time.monotonic()
            try:
                attempt = _within_deadline(
                    lambda _stop: ask_structured(
                        settings, model, schema, messages, config, structured_run
                    ),
                    started_structured + settings.timeout - built,
                    settings,
                )
            except Exception as exc:  # the deadline, or the cancel scope
                return _failed_call(settings, agent, exc, time.monotonic() - started_structured)
            built += time.monotonic() - started_structured  # a refusal's time counts too
        if attempt.error is not None:
            return _failed_call(settings, agent, attempt.error, attempt.latency)
        if attempt.raw is not None:  # answered: in the schema, or to be read as text
            answered = _reply_of(attempt.raw, agent, attempt.latency, attempt.parsed)
            answered.notes = attempt.notes
            return answered
    with model_request_slot():  # latency and the deadline count from the slot, not the wait
        started = time.perf_counter()
        try:
            retries = 0 if is_registered(settings.model) else settings.max_retries
            deadline = time.monotonic() + settings.timeout - built
            options = _request_options(model, agent)
            reply = _invoke_within_deadline(
                model, messages, config, settings, retries, deadline, options
            )
        except Exception as exc:  # timeouts, HTTP errors after retries, provider errors
            failed = _failed_call(settings, agent, exc, time.perf_counter() - started)
            failed.usage = merge_usage(attempt.usage(agent), failed.usage)
            return failed
        latency = time.perf_counter() - started
    answered = _reply_of(reply, agent, latency, None)
    answered.usage = merge_usage(attempt.usage(agent), answered.usage)
    answered.notes = attempt.notes
    return answered


class ModelDeadlineError(TimeoutError):
    """The call, retries included, did not finish within `model_timeout`."""


class ModelCallCancelled(Exception):
    """The call's cancel scope was set (its eval item ran out of time)."""


def _invoke_within_deadline(
    model: Any,
    messages: list[BaseMessage],
    config: Any,
    settings: ModelSettings,
    retries: int,
    deadline: float,
    options: dict[str, Any],
) -> Any:
    """`model.invoke` with retries, given back by `deadline` (time.monotonic())."""

    def attempts(stop: threading.Event) -> Any:
        for attempt in range(retries + 1):
            try:
                return model.invoke(messages, config=config, **options)
            except Exception as exc:
                if attempt == retries or not _retryable(exc):
                    raise
            pause = min(8.0, 0.5 * 2**attempt) * random.uniform(0.75, 1.25)
            if deadline - time.monotonic() <= pause or stop.wait(pause):
                raise ModelDeadlineError(_deadline_message(settings))
        raise AssertionError("unreachable")

    return _within_deadline(attempts, deadline, settings)


def _deadline_message(settings: ModelSettings) -> str:
    return f"no reply within model_timeout ({settings.timeout:g}s, retries included)"


def _within_deadline(
    work: Callable[[threading.Event], Any], deadline: float, settings: ModelSettings
) -> Any:
    """`work(stop)` in a worker thread, its result or its exception given back by `deadline`;
    past it (or once the cancel scope is set) `stop` is set and the caller gets an error."""
    stop = threading.Event()
    # Set when the work ends, or when the cancel scope is set: the caller waits on it alone.
    woken = threading.Event()
    box: dict[str, Any] = {}

    def run() -> None:
        with deadline_of_requests(deadline):
            try:
                box["reply"] = work(stop)
            except BaseException as exc:  # an interrupt is handed to the caller as is
                box["error"] = exc
            finally:
                woken.set()

    cancel = cancel_event()
    with cancel.waking(woken) if cancel is not None else contextlib.nullcontext():
        # The worker sees the caller's context: callbacks, tags and the cancel scope.
        _MODEL_WORKERS.run(run, contextvars.copy_context())
        woken.wait(max(0.0, deadline - time.monotonic()))
    if "reply" in box:
        return box["reply"]
    if "error" in box:
        raise box["error"]
    stop.set()
    if cancel is not None and cancel.is_set():
        raise ModelCallCancelled("the model call was cancelled: its item ran out of time")
    raise ModelDeadlineError(_deadline_message(settings))


_MODEL_WORKERS = WorkerThreads("macsql-model")
"""The threads that model calls run in, reused from one call to the next."""

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


def _request_options(model: BaseChatModel, agent: str) -> dict[str, Any]:
    """Per-request options that carry the agent over HTTP, for models on the OpenAI client
    (its `extra_headers`); other providers get none, since their clients may reject them."""
    from langchain_openai.chat_models.base import BaseChatOpenAI

    if isinstance(model, BaseChatOpenAI):
        return {"extra_headers": {AGENT_HEADER: agent}}
    return {}


def _reply_of(
    message: Any, agent: str, latency: float, structured: dict[str, Any] | None
) -> ModelReply:
    answer, thinking = split_reasoning(_text_of(message))
    reasoning = "\n\n".join(t for t in (reasoning_beside(message), thinking) if t)
    metadata = getattr(message, "response_metadata", None) or {}
    return ModelReply(
        answer,
        None,
        {agent: usage_entry(message, latency)},
        reasoning=reasoning,
        finish_reason=metadata.get("finish_reason"),
        structured=structured,
    )


def _failed_call(
    settings: ModelSettings, agent: str, exc: Exception, latency: float, *, requested: bool = True
) -> ModelReply:
    message = f"{MODEL_FAILURE_PREFIXES[0]} ({type(exc).__name__}): {_first_line(exc)}"
    if _names(exc).intersection(_CONNECTION_ERRORS):
        # "Connection error." alone: what happened is in the cause (refused, name unknown,
        # the connection closed mid-reply).
        root = _root_cause(exc)
        if root is not exc:
            message = f"{message.rstrip('.')} ({_first_line(root)})"
    fix = fix_for(exc, settings, requested=requested)
    return ModelReply(
        "", f"{message.rstrip('.')}; {fix}" if fix else message, {agent: usage_entry(None, latency)}
    )


_CONNECTION_ERRORS = ("ModelConnectionError", "APIConnectionError")

# langchain-core's provider-neutral classes (every integration raises subclasses of them), and
# openai's own for clients that raise those unwrapped; timeouts first, they are connection
# errors too.
_FIXES = (
    (
        ("ModelTimeoutError", "APITimeoutError"),
        "no reply from {url} within model_timeout ({timeout:g} s): raise model_timeout, or "
        "check that the server at base_url is up",
    ),
    (
        # httpx's, under the connection error: the server was reached and then hung up
        ("RemoteProtocolError", "ReadError"),
        "{url} closed the connection before its reply was complete: the server may have "
        "crashed or restarted, or a proxy cut the reply; check the server's log",
    ),
    (
        _CONNECTION_ERRORS,
        "tried {url}: set base_url (--base-url or OPENAI_BASE_URL) to your OpenAI-compatible "
        "server, or model (--model) to another provider",
    ),
    (
        ("ModelAuthenticationError", "AuthenticationError", "PermissionDeniedError"),
        "{url} refused the API key: set api_key (--api-key or OPENAI_API_KEY)",
    ),
    (
        ("ModelNotFoundError", "NotFoundError"),
        "{url} does not serve model {name!r}: check model (--model) and base_url (--base-url, "
        "usually ending in /v1)",
    ),
    (
        # langchain indexes the reply's first choice: a reply with an empty `choices` list
        ("IndexError",),
        "{url} answered without any choice (an empty `choices` list): check that base_url is "
        "an OpenAI-compatible chat-completions server and that it serves model {name!r}",
    ),
)


_NOT_A_COMPLETION = (
    "{url} answered with something that is not an OpenAI chat completion (or, to a streamed "
    "request, no chunk of one): check that base_url is an OpenAI-compatible chat-completions "
    "server (usually ending in /v1), not a web page or a proxy's answer"
)

_READING_ERRORS = (json.JSONDecodeError, ValueError, TypeError, AttributeError, KeyError)
"""Plain Python errors out of a request: the client could not read the server's answer (a body
that is not JSON, a message missing from the choice, a stream with no chunk). Exact types only:
pydantic's ValidationError, a ValueError too, is a reply that does not fit a schema."""


def fix_for(exc: BaseException, settings: ModelSettings, *, requested: bool = True) -> str | None:
    """What to change when a model call fails for a reason of configuration, or None.
    `requested`: the error came out of a request (not out of building the client)."""
    names = _names(exc)
    template = next((t for classes, t in _FIXES if names.intersection(classes)), None)
    if template is None and requested and type(exc) in _READING_ERRORS:
        provider, sep, _name = settings.model.partition(":")
        if (provider == "openai" or not sep) and not is_registered(settings.model):
            template = _NOT_A_COMPLETION
    if template is None:
        return None
    return template.format(
        url=endpoint_of(settings),
        timeout=settings.timeout,
        name=settings.model.partition(":")[2] or settings.model,
    )


def _causes(exc: BaseException) -> list[BaseException]:
    """The exception and the ones it was raised from, outermost first."""
    chain = [exc]
    while chain[-1].__cause__ is not None and len(chain) < 20:
        chain.append(chain[-1].__cause__)
    return chain


def _names(exc: BaseException) -> set[str]:
    return {cls.__name__ for link in _causes(exc) for cls in type(link).__mro__}


def _root_cause(exc: BaseException) -> BaseException:
    return _causes(exc)[-1]


def _text_of(message: Any) -> str:
    content = message.content if isinstance(message, AIMessage | BaseMessage) else message
    if isinstance(content, list):  # content blocks; reasoning blocks are read apart
        text = "".join(
            (b.get("text", "") if b.get("type", "text") == "text" else "")
            if isinstance(b, dict)
            else str(b)
            for b in content
        )
    else:
        text = str(content or "")
    calls = _tool_calls_text(message)
    return f"{text}\n{calls}".strip() if calls else text


def _tool_calls_text(message: Any) -> str:
    """A message's tool calls as JSON text (`[{"name", "arguments"}]`), so that an answer given
    as a tool call is read like one written in text: a model may call a tool nobody offered,
    or answer a structured request in a shape that does not fit."""
    calls = [
        {"name": c.get("name"), "arguments": c.get("args")}
        for c in getattr(message, "tool_calls", None) or []
    ]
    calls += [
        {"name": c.get("name"), "arguments": c.get("args")}
        for c in getattr(message, "invalid_tool_calls", None) or []
    ]
    return json.dumps(calls, ensure_ascii=False) if calls else ""


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0][:300] if text else type(exc).__name__
