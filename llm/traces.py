"""Traces of one run: every model call in order, as sent and as answered, with what followed.

A trace is what a fine-tuning set is made of (MAC-SQL's SQL-Llama recipe): each agent call's
messages exactly as sent, the reply (and the model's reasoning, kept apart when the server sends
it), usage, and the outcome that followed: the execution of the SQL the call wrote, or the
tables the Selector kept.

    with recording_traces() as trace:
        graph.invoke(payload, context=context)
    trace.calls  # JSON-ready, in call order

The recorder is a context variable, like the request slots (`request_slots.py`): it follows the
asyncio task of one eval item and the executor threads LangGraph runs its sync nodes in
(langchain copies the context into them), so concurrent items never share a trace and a forked
eval process records its own. Outside the block nothing is recorded and nothing is kept.
The model's connection settings (API key, base URL) are never part of a trace.

What feeds it: `call_model` is wrapped by `traced`; the executor calls `record_execution`; the
Selector adds its kept tables with `annotate_call`.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, Protocol, TypeVar, cast

from langchain_core.messages import (
    BaseMessage,
    HumanMessage,
    SystemMessage,
    convert_to_openai_messages,
)

# What a trace keeps of an execution: enough to judge and replay it, not the result rows.
_EXECUTION_KEYS = ("sql", "outcome", "error", "error_class", "row_count")


class TraceRecorder:
    """The calls of one run, in order; thread-safe, as R^3's reviewers call at once."""

    def __init__(self) -> None:
        self.calls: list[dict[str, Any]] = []
        self._lock = threading.Lock()

    def add_call(self, call: dict[str, Any]) -> None:
        with self._lock:
            self.calls.append(call)

    def add_execution(self, record: Mapping[str, Any]) -> None:
        """The execution follows the latest call that has none yet (its SQL's execution)."""
        execution = {k: record.get(k) for k in _EXECUTION_KEYS if k in record}
        with self._lock:
            if self.calls and self.calls[-1].get("execution") is None:
                self.calls[-1]["execution"] = execution
            else:  # SQL given by the caller, or a second execution with no call between
                self.calls.append({"agent": None, "execution": execution})

    def annotate(self, agent: str, **fields: Any) -> None:
        """Add what followed to the latest call of `agent` (e.g. the Selector's kept tables)."""
        with self._lock:
            for call in reversed(self.calls):
                if call.get("agent") == agent:
                    call.update(fields)
                    return


_current: ContextVar[TraceRecorder | None] = ContextVar("macsql_trace_recorder", default=None)


@contextmanager
def recording_traces() -> Iterator[TraceRecorder]:
    """Record the calls of every graph run in this block (and the tasks and threads it starts)."""
    recorder = TraceRecorder()
    token = _current.set(recorder)
    try:
        yield recorder
    finally:
        _current.reset(token)


def message_dicts(messages: Sequence[BaseMessage]) -> list[dict[str, Any]]:
    """Messages in the OpenAI chat format, as the client sends them."""
    return [dict(m) for m in convert_to_openai_messages(list(messages))]


def sent_messages(prompt: str | list[BaseMessage], system: str | None) -> list[BaseMessage]:
    """The messages `call_model` sends for a prompt and an optional system prompt."""
    messages: list[BaseMessage] = [HumanMessage(prompt)] if isinstance(prompt, str) else [*prompt]
    if system:
        messages.insert(0, SystemMessage(system))
    return messages


class _Reply(Protocol):
    text: str
    error: str | None
    usage: Any


_Call = TypeVar("_Call", bound=Callable[..., Any])


def traced(call_model: _Call) -> _Call:
    """Record each call of `call_model(settings, agent, prompt, *, system=None, ...)` in the
    trace being recorded, if any: a decorator, so the call itself stays as it is."""

    @functools.wraps(call_model)
    def call(settings: Any, agent: str, prompt: str | list[BaseMessage], **options: Any) -> _Reply:
        reply: _Reply = call_model(settings, agent, prompt, **options)
        recorder = _current.get()
        if recorder is not None:
            messages = sent_messages(prompt, options.get("system"))
            recorder.add_call(
                {
                    "agent": agent,
                    "model": settings.model,
                    "messages": message_dicts(messages),
                    "reply": reply.text,
                    "reasoning": getattr(reply, "reasoning", None) or None,
                    "error": reply.error,
                    "finish_reason": getattr(reply, "finish_reason", None),
                    "usage": dict((reply.usage or {}).get(agent) or {}),
                    "execution": None,
                }
            )
        return reply

    return cast(_Call, call)


def record_execution(record: Mapping[str, Any]) -> None:
    """The execution of SQL that an agent wrote, if a trace is being recorded."""
    recorder = _current.get()
    if recorder is not None:
        recorder.add_execution(record)


def annotate_call(agent: str, **fields: Any) -> None:
    """What followed `agent`'s latest call, if a trace is being recorded."""
    recorder = _current.get()
    if recorder is not None:
        recorder.annotate(agent, **fields)
