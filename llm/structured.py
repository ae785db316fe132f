"""Structured output where the model supports it, and text where it does not.

`Context.reply_format="structured"` makes each agent ask through langchain's
`with_structured_output` with its own Pydantic schema (sent as JSON schema, and checked against
the Pydantic model here, so that an answer that does not fit is kept, not raised). Whatever
happens, the reply is still read:

- a server that refuses the request (HTTP 400, tool calling or `response_format` unsupported) or
  a chat model that cannot bind a schema: the call is made again in text, and every later call
  to that model in the same run goes straight to text;
- a server that accepts the request but answers free text, or JSON of another shape: the reply
  is read as text, by the same readers as a text reply.

Each is said once per run (a warning, and a note on that reply that names the setting to
change). A run is one `StructuredRun`: an eval, one request to a server, one `macsql ask`; a
long-lived host asks again in its next run, so one refusal does not degrade it for good.
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage
from pydantic import BaseModel, ValidationError

from macsql.core.records import Usage
from macsql.llm.settings import ModelSettings

log = logging.getLogger("macsql")

_REJECTING_STATUS = {400, 404, 415, 422, 501}
_SETTING = "set reply_format=text (--set reply_format=text) to ask in text from the start"


class StructuredRun:
    """What one run learnt about structured output: the models that refused it (asked in text
    for the rest of the run), and the notes already recorded (each is said once a run)."""

    def __init__(self) -> None:
        self._refused: set[ModelSettings] = set()
        self._said: set[tuple[ModelSettings, str]] = set()
        self._lock = threading.Lock()

    def refused(self, settings: ModelSettings) -> bool:
        with self._lock:
            return settings in self._refused

    def refuse(self, settings: ModelSettings) -> None:
        with self._lock:
            self._refused.add(settings)

    def first(self, settings: ModelSettings, what: str) -> bool:
        """Whether `what` is said for the first time this run about `settings`'s model."""
        with self._lock:
            key = (settings, what)
            if key in self._said:
                return False
            self._said.add(key)
            return True

    def __reduce__(self) -> tuple[Any, ...]:
        return (StructuredRun, ())  # a worker process learns on its own


@dataclass
class StructuredAttempt:
    """What asking for structured output gave: an answer, a refusal, or an error."""

    raw: Any = None
    """The model's message, when it answered (even if its answer did not fit the schema)."""
    parsed: dict[str, Any] | None = None
    """The answer's fields, when they fit the schema."""
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


def ask_structured(
    settings: ModelSettings,
    model: BaseChatModel,
    schema: type[BaseModel],
    messages: list[BaseMessage],
    config: Any,
    run: StructuredRun | None = None,
) -> StructuredAttempt:
    """One structured-output request; a refusal is remembered for `settings` in `run` (a call
    outside any run remembers nothing)."""
    run = run if run is not None else StructuredRun()
    if run.refused(settings):
        return StructuredAttempt()
    try:
        runnable = model.with_structured_output(_json_schema(schema), include_raw=True)
    except Exception as exc:  # NotImplementedError: the chat model cannot bind a schema
        return StructuredAttempt(notes=_refuse(run, settings, exc))
    started = time.perf_counter()
    try:
        out = runnable.invoke(messages, config=config)
    except Exception as exc:
        latency = time.perf_counter() - started
        if _is_refusal(exc):
            return StructuredAttempt(latency=latency, requests=1, notes=_refuse(run, settings, exc))
        return StructuredAttempt(error=exc, latency=latency)
    latency = time.perf_counter() - started
    raw = out.get("raw") if isinstance(out, dict) else out
    parsed, misfit = _fitted(schema, out.get("parsed") if isinstance(out, dict) else None)
    attempt = StructuredAttempt(raw=raw, parsed=parsed, latency=latency, requests=1)
    if parsed is None and raw is not None:
        attempt.notes = _misfit(run, settings, schema, misfit)
    return attempt


def _json_schema(schema: type[BaseModel]) -> dict[str, Any]:
    """The schema as JSON schema: langchain then parses the answer leniently (an answer that
    does not fit comes back as the raw message instead of an exception)."""
    from langchain_core.utils.function_calling import convert_to_json_schema

    return convert_to_json_schema(schema)


def _fitted(schema: type[BaseModel], parsed: Any) -> tuple[dict[str, Any] | None, str]:
    """The answer's fields checked against the Pydantic schema, or None and why not."""
    if isinstance(parsed, BaseModel):
        return parsed.model_dump(), ""
    if not isinstance(parsed, dict):
        return None, "free text"
    try:
        return schema.model_validate(parsed).model_dump(), ""
    except ValidationError as exc:
        missing = sorted({str(e["loc"][0]) for e in exc.errors() if e.get("loc")})
        return None, f"JSON with the keys {sorted(parsed)[:6]}, lacking {missing}"


def _is_refusal(exc: Exception) -> bool:
    status = getattr(exc, "status_code", None) or getattr(
        getattr(exc, "response", None), "status_code", None
    )
    return status in _REJECTING_STATUS or isinstance(exc, NotImplementedError)


def _refuse(run: StructuredRun, settings: ModelSettings, exc: Exception) -> list[str]:
    """Remember the refusal for the run; the note to record, the first time only."""
    run.refuse(settings)
    detail = " ".join(str(exc).split())[:200] or type(exc).__name__
    note = (
        f"structured output is not supported by {settings.model} ({detail}); "
        f"text replies are used for this run; {_SETTING}"
    )
    return _say(run, settings, "refused", note)


def _misfit(
    run: StructuredRun, settings: ModelSettings, schema: type[BaseModel], why: str
) -> list[str]:
    note = (
        f"{settings.model} did not answer a structured-output request in the "
        f"{schema.__name__} schema (it sent {why}: the server may ignore response_format and "
        f"tools); such replies are read as text; {_SETTING}"
    )
    return _say(run, settings, "misfit", note)


def _say(run: StructuredRun, settings: ModelSettings, what: str, note: str) -> list[str]:
    if not run.first(settings, what):
        return []
    log.warning("macsql: %s", note)
    return [note]
