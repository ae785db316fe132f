"""Structured output where the model supports it, and one text fallback per model when not.

`Context.reply_format="structured"` makes each agent ask through langchain's
`with_structured_output` with its own Pydantic schema. Many OpenAI-compatible servers reject
tool calling or `response_format` (HTTP 400), and some chat models cannot bind a schema at all.
The first such refusal is said once (a warning, and a note on that reply); every later call to
the same model in this process goes straight to text.
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage
from pydantic import BaseModel

from macsql.core.state import Usage
from macsql.llm.settings import ModelSettings

log = logging.getLogger("macsql")

_REJECTING_STATUS = {400, 404, 415, 422, 501}
_rejected: set[ModelSettings] = set()
_lock = threading.Lock()


@dataclass
class StructuredAttempt:
    """What asking for structured output gave: an answer, a refusal, or an error."""

    raw: Any = None
    """The model's message, when it answered (even if its answer did not fit the schema)."""
    parsed: dict[str, Any] | None = None
    error: Exception | None = None
    """A failure that is not a refusal (timeout, server error): the call has failed."""
    latency: float = 0.0
    requests: int = 0
    notes: list[str] = field(default_factory=list)

    def usage(self, agent: str) -> Usage:
        """The refused request, which the server did answer, counts as a call."""
        if not self.requests or self.raw is not None:
            return {}
        return {
            agent: {
                "calls": self.requests,
                "input_tokens": 0,
                "output_tokens": 0,
                "latency_s": round(self.latency, 6),
            }
        }


def structured_rejected(settings: ModelSettings) -> bool:
    with _lock:
        return settings in _rejected


def forget_rejections() -> None:
    """Try structured output again everywhere (for tests and long-lived hosts)."""
    with _lock:
        _rejected.clear()


def ask_structured(
    settings: ModelSettings,
    model: BaseChatModel,
    schema: type[BaseModel],
    messages: list[BaseMessage],
    config: Any,
) -> StructuredAttempt:
    """One structured-output request; a refusal is remembered for `settings`."""
    if structured_rejected(settings):
        return StructuredAttempt()
    try:
        runnable = model.with_structured_output(schema, include_raw=True)
    except Exception as exc:  # NotImplementedError: the chat model cannot bind a schema
        return StructuredAttempt(notes=_reject(settings, exc))
    started = time.perf_counter()
    try:
        out = runnable.invoke(messages, config=config)
    except Exception as exc:
        latency = time.perf_counter() - started
        if _is_refusal(exc):
            return StructuredAttempt(latency=latency, requests=1, notes=_reject(settings, exc))
        return StructuredAttempt(error=exc, latency=latency)
    latency = time.perf_counter() - started
    parsed = out.get("parsed") if isinstance(out, dict) else None
    if isinstance(parsed, BaseModel):
        parsed = parsed.model_dump()
    raw = out.get("raw") if isinstance(out, dict) else out
    return StructuredAttempt(
        raw=raw,
        parsed=parsed if isinstance(parsed, dict) else None,
        latency=latency,
        requests=1,
    )


def _is_refusal(exc: Exception) -> bool:
    status = getattr(exc, "status_code", None) or getattr(
        getattr(exc, "response", None), "status_code", None
    )
    return status in _REJECTING_STATUS or isinstance(exc, NotImplementedError)


def _reject(settings: ModelSettings, exc: Exception) -> list[str]:
    """Remember the refusal; the note to record, the first time only."""
    detail = " ".join(str(exc).split())[:200] or type(exc).__name__
    note = (
        f"structured output is not supported by {settings.model} ({detail}); "
        "text replies are used for this run"
    )
    with _lock:
        first = settings not in _rejected
        _rejected.add(settings)
    if not first:
        return []
    log.warning("macsql: %s", note)
    return [note]
